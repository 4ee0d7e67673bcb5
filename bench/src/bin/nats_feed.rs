//! The load generator of the `nats` bench and `callgrind-nats.sh`: W1 calls (`subtract
//! [42,23]`, answer 19, every answer checked) as NATS requests from CONNS connections with
//! INFLIGHT requests under way on each, CALLS in all.
//!
//! Usage: `nats-feed URL SUBJECT CALLS CONNS INFLIGHT`; prints `CALLS SECONDS` on stdout, or
//! fails (exit 1) on a wrong or missing answer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const W1: &[u8] = br#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, subject, calls, conns, inflight] = args.as_slice() else {
        return Err("usage: nats-feed URL SUBJECT CALLS CONNS INFLIGHT".into());
    };
    let (calls, conns, inflight): (u64, usize, usize) =
        (calls.parse()?, conns.parse()?, inflight.parse()?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..conns {
            clients.push(async_nats::connect(url.as_str()).await?);
        }
        let left = Arc::new(AtomicU64::new(calls));
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for client in &clients {
            for _ in 0..inflight {
                let (client, subject, left) = (client.clone(), subject.clone(), Arc::clone(&left));
                tasks.spawn(async move {
                    while left
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        let request = async_nats::Request::new()
                            .payload(W1.into())
                            .timeout(Some(Duration::from_secs(10)));
                        let answer = client.send_request(subject.clone(), request).await?;
                        if !answer.payload.windows(11).any(|w| w == br#""result":19"#) {
                            return Err(format!("wrong answer: {:?}", answer.payload).into());
                        }
                    }
                    Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
                });
            }
        }
        while let Some(done) = tasks.join_next().await {
            done?.map_err(|e| e.to_string())?;
        }
        println!("{calls} {}", started.elapsed().as_secs_f64());
        Ok(())
    })
}
