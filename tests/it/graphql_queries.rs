//! GraphQL queries through HTTP on the blog fixture.

use crate::harness::TestServer;
use serde_json::json;

#[tokio::test]
async fn smoke() {
    let s = TestServer::blog().await;
    let r = s
        .gql("{ author(order_by: {id: asc}) { id name articles(order_by: {id: asc}) { title } } }")
        .await;
    assert_eq!(
        r["data"]["author"][0]["articles"][0]["title"], "Rust in practice",
        "{r}"
    );
    let r = s
        .gql("{ articleById(id: 3) { title viewCount author { name } } }")
        .await;
    assert_eq!(
        r,
        json!({"data": {"articleById": {"title": "Lund guide", "viewCount": 300, "author": {"name": "Bo"}}}})
    );
}
