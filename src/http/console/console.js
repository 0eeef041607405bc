// The Basalt console: GraphiQL, served by the engine itself, with two controls above it.
//
// * The admin secret is kept in this tab's session storage (gone when the tab closes) and sent
//   as X-Svc-Admin-Secret; it never appears in a URL.
// * The role (free text, with the roles found in the metadata as suggestions) is sent as
//   X-Svc-Role, so the schema and the results are the ones that role gets.
//
// Changing either remounts GraphiQL, which introspects the schema again. Queries and mutations
// go over HTTP; subscriptions over a graphql-transport-ws socket on the same origin, with the
// headers sent in connection_init.
(function () {
  'use strict';

  const SECRET_KEY = 'basalt.console.adminSecret';
  const ROLE_KEY = 'basalt.console.role';
  const graphqlUrl = new URL('/v1/graphql', window.location.href).toString();
  const queryUrl = new URL('/v1/query', window.location.href).toString();
  const socketUrl = graphqlUrl.replace(/^http/, 'ws');

  const secretInput = document.getElementById('admin-secret');
  const roleInput = document.getElementById('role');
  const roleList = document.getElementById('roles');
  const status = document.getElementById('status');
  const root = ReactDOM.createRoot(document.getElementById('graphiql'));

  secretInput.value = sessionStorage.getItem(SECRET_KEY) || '';
  roleInput.value = sessionStorage.getItem(ROLE_KEY) || '';

  /** The headers the two controls stand for. */
  function controlHeaders() {
    const headers = {};
    if (secretInput.value) headers['X-Svc-Admin-Secret'] = secretInput.value;
    const role = roleInput.value.trim();
    if (role) headers['X-Svc-Role'] = role;
    return headers;
  }

  /**
   * Whether the operation to run is a subscription, read from the query text itself (GraphiQL's
   * parsed document can lag behind the editor). Only top-level tokens matter: comments and
   * strings are dropped, and what is inside braces or parentheses is skipped.
   */
  function isSubscription(params) {
    const text = (params.query || '').replace(/"""[\s\S]*?"""|"(?:\\.|[^"\\\n])*"|#[^\n]*/g, ' ');
    const tokens = /[{}()]|@?[_A-Za-z][_0-9A-Za-z]*/g;
    const operations = [];
    let braces = 0;
    let parens = 0;
    let current = null;
    for (let m = tokens.exec(text); m; m = tokens.exec(text)) {
      const t = m[0];
      if (t === '(') parens += 1;
      else if (t === ')') parens -= 1;
      else if (parens > 0 || t.startsWith('@')) continue;
      else if (t === '{') {
        if (braces === 0 && !current) operations.push({ kind: 'query' });
        if (braces === 0) current = null;
        braces += 1;
      } else if (t === '}') braces -= 1;
      else if (braces === 0) {
        if (current && current.name === undefined) current.name = t;
        else if (['query', 'mutation', 'subscription', 'fragment'].includes(t)) {
          current = { kind: t, name: undefined };
          operations.push(current);
        }
      }
    }
    const executable = operations.filter((o) => o.kind !== 'fragment');
    const chosen = params.operationName
      ? executable.find((o) => o.name === params.operationName)
      : executable[0];
    return Boolean(chosen) && chosen.kind === 'subscription';
  }

  /** A fetcher for one value of the controls; the socket opens at the first subscription. */
  function makeFetcher(fixed) {
    const sockets = new Map();
    function socketFor(headers) {
      const key = JSON.stringify(headers);
      if (!sockets.has(key)) {
        sockets.set(key, graphqlWs.createClient({
          url: socketUrl,
          lazy: true,
          connectionParams: { headers },
        }));
      }
      return sockets.get(key);
    }
    return function fetcher(params, opts) {
      // Headers typed in GraphiQL's "Headers" tab are sent too; the controls win.
      const headers = Object.assign({}, (opts && opts.headers) || {}, fixed);
      if (isSubscription(params)) {
        const client = socketFor(headers);
        return {
          subscribe(observer) {
            const stop = client.subscribe(params, {
              next: (value) => observer.next(value),
              error: (error) => observer.error(error instanceof Error ? error
                : new Error(error && error.reason ? error.reason : 'the socket closed')),
              complete: () => observer.complete(),
            });
            return { unsubscribe: stop };
          },
        };
      }
      return fetch(graphqlUrl, {
        method: 'POST',
        headers: Object.assign({ 'Content-Type': 'application/json' }, headers),
        body: JSON.stringify(params),
      }).then((response) => response.json());
    };
  }

  /** Suggests the roles named in the metadata's permissions (needs admin access). */
  function loadRoles(headers) {
    fetch(queryUrl, {
      method: 'POST',
      headers: Object.assign({ 'Content-Type': 'application/json' }, headers, { 'X-Svc-Role': 'admin' }),
      body: JSON.stringify({ type: 'export_metadata', args: {} }),
    })
      .then((response) => response.json().then((body) => ({ ok: response.ok, body })))
      .then(({ ok, body }) => {
        if (!ok) {
          status.textContent = body && body.error ? 'metadata: ' + body.error : '';
          return;
        }
        status.textContent = '';
        const roles = new Set(['admin']);
        for (const table of body.tables || []) {
          for (const kind of ['select', 'insert', 'update', 'delete']) {
            for (const permission of table[kind + '_permissions'] || []) roles.add(permission.role);
          }
        }
        for (const action of body.actions || []) {
          for (const permission of action.permissions || []) roles.add(permission.role);
        }
        roleList.replaceChildren(...[...roles].sort().map((role) => {
          const option = document.createElement('option');
          option.value = role;
          return option;
        }));
      })
      .catch((error) => { status.textContent = 'metadata: ' + error.message; });
  }

  function render() {
    const headers = controlHeaders();
    root.render(React.createElement(GraphiQL, {
      // A new key remounts GraphiQL, so the schema is introspected again for the new headers.
      key: JSON.stringify(headers),
      fetcher: makeFetcher(headers),
      isHeadersEditorEnabled: true,
      // The Headers tab is not persisted: a secret pasted there must not outlive the tab.
      shouldPersistHeaders: false,
    }));
    loadRoles(headers);
  }

  secretInput.addEventListener('change', () => {
    sessionStorage.setItem(SECRET_KEY, secretInput.value);
    render();
  });
  roleInput.addEventListener('change', () => {
    sessionStorage.setItem(ROLE_KEY, roleInput.value.trim());
    render();
  });
  render();
})();
