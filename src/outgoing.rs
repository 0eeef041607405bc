//! Outgoing HTTP calls that only read: remote-schema introspection, forwarded remote queries
//! and the auth hook. Such a call that got no answer is sent once more.

/// Sends `request` and, if it got no answer for a reason other than a timeout, sends it once
/// more. The usual cause is a pooled keep-alive connection the peer closed just as it was
/// reused (or, in a process with several runtimes, whose task ended with the runtime that made
/// it): the second try takes a new connection. A timeout is not retried, since the peer may
/// simply be slow. Only for calls that are safe to make twice: never a mutation, an action or a
/// webhook that writes.
pub async fn send_read(
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, reqwest::Error> {
    // `None` only for a streamed body, which these calls never have.
    let again = request.try_clone();
    match (request.send().await, again) {
        (Err(err), Some(again)) if !err.is_timeout() => again.send().await,
        (sent, _) => sent,
    }
}
