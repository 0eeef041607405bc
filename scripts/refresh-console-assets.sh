#!/usr/bin/env bash
# Refreshes the console's vendored assets (src/http/console/vendor/) from the npm registry at
# the pinned versions below, with each package's licence beside its files. The engine embeds
# these files in its binary, so /console never asks another host for anything.
#
# To move to another version: change the pin, run this script, load /console, commit the result.
# GraphiQL stays on 3.x: it is the last line published with a browser (UMD) build, which needs no
# bundler.
set -euo pipefail
cd "$(dirname "$0")/.."

GRAPHIQL=3.8.3
REACT=18.3.1
GRAPHQL_WS=5.16.2

out=src/http/console/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

unpack() { # <package@version> -> directory holding the unpacked package
  local spec=$1 dir
  dir="$work/$(echo "$spec" | tr '@/' '__')"
  mkdir -p "$dir"
  (cd "$work" && npm pack --silent "$spec" >/dev/null)
  tar xzf "$work/$(cd "$work" && ls -t ./*.tgz | head -1)" -C "$dir"
  rm -f "$work"/*.tgz
  echo "$dir/package"
}

rm -rf "$out"
mkdir -p "$out"
g=$(unpack "graphiql@$GRAPHIQL")
cp "$g/graphiql.min.js" "$g/graphiql.min.css" "$out/"
cp "$g/LICENSE" "$out/LICENSE.graphiql"
r=$(unpack "react@$REACT")
cp "$r/umd/react.production.min.js" "$out/"
cp "$r/LICENSE" "$out/LICENSE.react"
d=$(unpack "react-dom@$REACT")
cp "$d/umd/react-dom.production.min.js" "$out/"
cp "$d/LICENSE" "$out/LICENSE.react-dom"
w=$(unpack "graphql-ws@$GRAPHQL_WS")
cp "$w/umd/graphql-ws.min.js" "$out/"
cp "$w/LICENSE.md" "$out/LICENSE.graphql-ws"

{
  echo "# Vendored by scripts/refresh-console-assets.sh; do not edit by hand."
  echo "graphiql $GRAPHIQL"
  echo "react $REACT"
  echo "react-dom $REACT"
  echo "graphql-ws $GRAPHQL_WS"
  echo
  (cd "$out" && sha256sum ./*.js ./*.css | sed 's|\./||')
} > "$out/VERSIONS"
echo "console assets refreshed in $out:"
cat "$out/VERSIONS"
