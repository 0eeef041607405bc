//! A TCP front for the HTTP peers of the tests (remote schemas, the auth hook): it closes a
//! connection without answering when told to, as a peer closing a kept-alive connection just
//! as the engine reuses it.

use std::sync::Arc;

/// A TCP front to a server: it passes connections through, but when told to, closes the
/// connection of the next request to arrive without passing it on, as a remote that closes a
/// keep-alive connection just as the engine reuses it.
pub(crate) struct Front {
    pub(crate) url: String,
    drop_next: Arc<std::sync::atomic::AtomicBool>,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
}

impl Front {
    pub(crate) async fn start(backend_url: &str) -> Front {
        use std::sync::atomic::Ordering::SeqCst;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rest = backend_url.trim_start_matches("http://");
        let (backend, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let backend = backend.to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front = Front {
            url: format!("http://{}{path}", listener.local_addr().unwrap()),
            drop_next: Arc::default(),
            accepted: Arc::default(),
        };
        let (drop_next, accepted) = (front.drop_next.clone(), front.accepted.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                accepted.fetch_add(1, SeqCst);
                let (drop_next, backend) = (drop_next.clone(), backend.clone());
                tokio::spawn(async move {
                    let Ok(upstream) = tokio::net::TcpStream::connect(&backend).await else {
                        return;
                    };
                    let (mut from_client, mut to_client) = client.into_split();
                    let (mut from_upstream, mut to_upstream) = upstream.into_split();
                    let back = tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut from_upstream, &mut to_client).await;
                    });
                    let mut buffer = vec![0; 16 * 1024];
                    while let Ok(n @ 1..) = from_client.read(&mut buffer).await {
                        if drop_next.swap(false, SeqCst)
                            || to_upstream.write_all(&buffer[..n]).await.is_err()
                        {
                            break;
                        }
                    }
                    // Both halves of the client's socket dropped: its connection closes.
                    back.abort();
                });
            }
        });
        front
    }

    /// The next request to arrive gets its connection closed, unanswered.
    pub(crate) fn drop_next(&self) {
        self.drop_next
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}
