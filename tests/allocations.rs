//! Heap allocations on the request path, counted by a wrapping global allocator (never timed).
//!
//! The engine hands Postgres's JSON to the client as bytes: it neither parses nor
//! re-serializes it, so the number of allocations a request makes does not grow with the rows
//! it returns, and the bytes it allocates grow only by a few copies of the answer. A change
//! that re-serialized results (a `Value` per row or field) would fail here.
//!
//! Its own test binary: the counting allocator is process-wide. Only the server's threads
//! count; the client runs on a thread marked quiet, and each figure is a mean over many
//! requests, so the odd background allocation does not move it.

#[path = "it/harness.rs"]
mod harness;

use harness::{fresh_database, run_sql, TestServer};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the client's thread: its allocations are not the server's.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

fn count(size: usize) {
    if !QUIET.try_with(Cell::get).unwrap_or(true) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed to the system allocator unchanged; counting touches only
// atomics and a const-initialized thread-local, neither of which allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Mean allocations and allocated bytes per request on the server, and the answer's length.
struct PerRequest {
    allocations: f64,
    bytes: f64,
    answer: usize,
}

/// Sends `body` to `/v1/graphql` `n` times over one kept-alive connection, from a quiet
/// thread, after a few unmeasured requests (plan cache, prepared statement, buffers).
async fn measure(server: &TestServer, body: serde_json::Value, n: u32) -> PerRequest {
    let addr = server.running.addr;
    let body = body.to_string();
    tokio::task::spawn_blocking(move || {
        QUIET.with(|q| q.set(true));
        let stream = TcpStream::connect(addr).expect("connect");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut writer = stream;
        let request = format!(
            "POST /v1/graphql HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut send = || {
            writer.write_all(request.as_bytes()).expect("send");
            answer(&mut reader)
        };
        for _ in 0..10 {
            send();
        }
        let (allocations, bytes) = (
            ALLOCATIONS.load(Ordering::SeqCst),
            BYTES.load(Ordering::SeqCst),
        );
        let mut answer = Vec::new();
        for _ in 0..n {
            answer = send();
        }
        let text = String::from_utf8_lossy(&answer);
        assert!(!text.contains("\"errors\""), "{text}");
        PerRequest {
            allocations: (ALLOCATIONS.load(Ordering::SeqCst) - allocations) as f64 / f64::from(n),
            bytes: (BYTES.load(Ordering::SeqCst) - bytes) as f64 / f64::from(n),
            answer: answer.len(),
        }
    })
    .await
    .expect("client thread")
}

/// Reads one HTTP/1.1 response with a `Content-Length` and returns its body.
fn answer(reader: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("response head");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let mut body = vec![0; length.expect("content-length")];
    reader.read_exact(&mut body).expect("response body");
    body
}

/// Most allocations a cached one-row query may make on the server, on average.
const ALLOCATION_BUDGET: f64 = 60.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_spliced_not_rebuilt() {
    let db = fresh_database().await;
    run_sql(
        &db,
        "CREATE TABLE item (id int PRIMARY KEY, name text NOT NULL, price numeric NOT NULL);
         INSERT INTO item SELECT i, 'item number ' || i, i * 1.5 FROM generate_series(1, 400) i;",
    )
    .await;
    let server = TestServer::on(&db, |_| {}).await;
    server
        .ok(json!({"type": "track_table", "args": {"table": "item"}}))
        .await;
    let list = "query ($n: Int!) { item(order_by: {id: asc}, limit: $n) { id name price } }";
    let one = measure(&server, json!({"query": list, "variables": {"n": 1}}), 200).await;
    let many = measure(
        &server,
        json!({"query": list, "variables": {"n": 400}}),
        200,
    )
    .await;
    eprintln!(
        "1 row: {:.1} allocations, {:.0} bytes, answer {} bytes; 400 rows: {:.1} allocations, \
         {:.0} bytes, answer {} bytes",
        one.allocations, one.bytes, one.answer, many.allocations, many.bytes, many.answer
    );
    assert!(many.answer > 50 * one.answer, "400 rows answer much more");
    // The budget of a cached query (45 allocations when it was set: HTTP, auth, plan cache
    // lookup, variable check, one statement, the answer). Raise it only knowingly, for a
    // feature or a dependency that needs more.
    assert!(
        one.allocations <= ALLOCATION_BUDGET,
        "{:.1} allocations per cached request, budget {ALLOCATION_BUDGET}",
        one.allocations
    );
    // No allocation per row or field: 400 rows cost what one does, but for the growth of a
    // few buffers (each doubles, so a handful of reallocations).
    assert!(
        many.allocations <= one.allocations + 12.0,
        "1 row: {:.1}, 400 rows: {:.1} allocations per request",
        one.allocations,
        many.allocations
    );
    // The answer's bytes are copied a few times (Postgres's row, the response body, buffer
    // growth), never expanded into a tree: a re-serializing engine allocates many times the
    // answer's length.
    let extra = many.bytes - one.bytes;
    let grown = (many.answer - one.answer) as f64;
    assert!(
        extra <= 8.0 * grown,
        "{extra:.0} more bytes allocated for {grown:.0} more bytes of answer"
    );
}
