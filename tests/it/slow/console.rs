//! The console in a real browser: headless Chromium (Debian's `chromium`) driven by
//! `puppeteer-core`, against a server with an admin secret.

use crate::auth::blog_server;
use serde_json::json;
use std::path::PathBuf;
use std::sync::OnceLock;

const SECRET: &str = "console-secret";

/// Chromium: `BASALT_TEST_CHROMIUM`, else Debian's `/usr/bin/chromium`. Without one the test
/// says so and passes, unless `BASALT_TEST_REQUIRE_BROWSER` is set (as `.ci/run` does, after
/// installing the package).
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("BASALT_TEST_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("BASALT_TEST_REQUIRE_BROWSER").is_none(),
        "no Chromium at {} (install Debian's chromium package or set BASALT_TEST_CHROMIUM)",
        path.display()
    );
    eprintln!(
        "skipping the console browser test: no Chromium at {}",
        path.display()
    );
    None
}

fn puppeteer() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        crate::harness::npm_workspace(
            "console-browser",
            &["puppeteer-core@24.16.0"],
            "console.mjs",
        )
    })
    .clone()
}

#[tokio::test]
async fn the_console_works_offline_in_a_browser() {
    let Some(chromium) = chromium() else { return };
    let s = blog_server(|c| c.admin_secret = Some(SECRET.into())).await;
    let dir = puppeteer();
    let report = crate::harness::node_json(
        &dir,
        "console.mjs",
        &[s.base.as_ref(), SECRET.as_ref(), chromium.as_os_str()],
    )
    .await;
    // Everything the page loaded came from this engine.
    assert_eq!(report["foreign"], json!([]), "{report:#}");
    assert!(
        report["requests"].as_array().unwrap().len() >= 7,
        "{report:#}"
    );
    assert_eq!(report["errors"], json!([]), "{report:#}");
    // The one failure: the role suggestions asked for before the secret was entered (the
    // second tab's failures are not recorded).
    assert_eq!(report["failures"], json!(["401 /v1/query"]), "{report:#}");
    // The role suggestions come from the metadata's permissions.
    assert_eq!(
        report["roles"],
        json!(["admin", "backend", "guest", "user"])
    );
    assert_eq!(
        report["adminResult"],
        json!({"data": {"author": [{"name": "Ann", "rating": 4.5}, {"name": "Bo", "rating": 3}]}})
    );
    // As guest, `rating` is not in the schema; the articles are only the published ones.
    assert_eq!(
        report["guestResult"]["errors"][0]["extensions"]["code"], "validation-failed",
        "{report:#}"
    );
    let guest_titles = report["guestAllowed"]["data"]["articles"]
        .as_array()
        .unwrap()
        .len();
    let all_titles = s.gql("{ articles { title } }").await["data"]["articles"]
        .as_array()
        .unwrap()
        .len();
    assert!(guest_titles > 0 && guest_titles < all_titles, "{report:#}");
    // The mutation ran from a second tab; the subscription, over the first tab's socket,
    // saw its change.
    assert_eq!(
        report["renamed"],
        json!({"data": {"update_author_by_pk": {"id": 1, "name": "Ann (console)"}}})
    );
    assert_eq!(
        report["firstLive"],
        json!({"data": {"author_by_pk": {"name": "Ann"}}})
    );
    assert_eq!(
        report["nextLive"],
        json!({"data": {"author_by_pk": {"name": "Ann (console)"}}})
    );
    // The secret is kept for the tab only, and never in a URL.
    assert_eq!(
        report["sessionStorage"]["basalt.console.adminSecret"],
        SECRET
    );
    assert!(!report["localStorage"].as_str().unwrap().contains(SECRET));
    assert!(report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|u| !u.as_str().unwrap().contains(SECRET)));
}
