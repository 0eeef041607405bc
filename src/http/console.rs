//! The console at `/console`: GraphiQL and its dependencies, vendored from npm by
//! `scripts/refresh-console-assets.sh` and embedded in the binary, so the page works on a
//! machine with no internet access and asks no other host for anything (its
//! Content-Security-Policy forbids it).

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Only this origin: scripts and styles from `/console/assets`, requests and the subscription
/// socket to this engine. GraphiQL's stylesheet inlines its fonts and icons as `data:` URLs and
/// React sets inline styles.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The embedded files: name, media type, bytes.
const ASSETS: &[(&str, &str, &[u8])] = &[
    ("console.js", JS, include_bytes!("console/console.js")),
    ("console.css", CSS, include_bytes!("console/console.css")),
    (
        "graphiql.min.js",
        JS,
        include_bytes!("console/vendor/graphiql.min.js"),
    ),
    (
        "graphiql.min.css",
        CSS,
        include_bytes!("console/vendor/graphiql.min.css"),
    ),
    (
        "react.production.min.js",
        JS,
        include_bytes!("console/vendor/react.production.min.js"),
    ),
    (
        "react-dom.production.min.js",
        JS,
        include_bytes!("console/vendor/react-dom.production.min.js"),
    ),
    (
        "graphql-ws.min.js",
        JS,
        include_bytes!("console/vendor/graphql-ws.min.js"),
    ),
    ("VERSIONS", TEXT, include_bytes!("console/vendor/VERSIONS")),
    (
        "LICENSE.graphiql",
        TEXT,
        include_bytes!("console/vendor/LICENSE.graphiql"),
    ),
    (
        "LICENSE.react",
        TEXT,
        include_bytes!("console/vendor/LICENSE.react"),
    ),
    (
        "LICENSE.react-dom",
        TEXT,
        include_bytes!("console/vendor/LICENSE.react-dom"),
    ),
    (
        "LICENSE.graphql-ws",
        TEXT,
        include_bytes!("console/vendor/LICENSE.graphql-ws"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// `GET /console`.
pub async fn page() -> Response {
    (
        [
            (
                CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY)),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        include_str!("console/index.html"),
    )
        .into_response()
}

/// `GET /console/assets/{name}`. The files change only with the binary, so a browser may keep
/// them for an hour without asking again.
pub async fn asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    let (_, media_type, bytes) = ASSETS
        .iter()
        .find(|(file, _, _)| *file == name)
        .ok_or(ApiError::NotFound)?;
    Ok((
        [
            (CONTENT_TYPE, HeaderValue::from_static(media_type)),
            (
                CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=3600"),
            ),
        ],
        *bytes,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::ASSETS;

    /// Every asset the page names is embedded, and nothing it loads comes from another host.
    #[test]
    fn the_page_names_only_embedded_assets() {
        let page = include_str!("console/index.html");
        let mut named = 0;
        for part in page.split("\"/console/assets/").skip(1) {
            let name = &part[..part.find('"').unwrap()];
            assert!(
                ASSETS.iter().any(|(file, _, _)| *file == name),
                "{name} is not embedded"
            );
            named += 1;
        }
        assert_eq!(named, 7);
        assert!(!page.contains("http://") && !page.contains("https://"));
    }
}
