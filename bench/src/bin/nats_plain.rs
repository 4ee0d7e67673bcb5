//! The reference of the `nats` bench: a plain `async-nats` request/reply loop that answers
//! `subtract` with serde_json (the request parsed into a struct, the answer serialized from
//! one), in one queue group, on one worker thread, each message answered in the loop itself.
//!
//! Usage: `nats-plain URL SUBJECT`; prints `ready` on stderr once subscribed.

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    method: &'a str,
    params: (i64, i64),
    #[serde(borrow)]
    id: &'a RawValue,
}

#[derive(Serialize)]
struct Answer<'a> {
    jsonrpc: &'static str,
    result: i64,
    id: &'a RawValue,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, subject] = args.as_slice() else {
        return Err("usage: nats-plain URL SUBJECT".into());
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let nats = async_nats::connect(url.as_str()).await?;
        let mut requests = nats.queue_subscribe(subject.clone(), "q".into()).await?;
        nats.flush().await?;
        eprintln!("ready");
        while let Some(message) = requests.next().await {
            let Some(reply) = message.reply else { continue };
            let Ok(request) = serde_json::from_slice::<Request<'_>>(&message.payload) else {
                continue;
            };
            if request.method != "subtract" {
                continue;
            }
            let (a, b) = request.params;
            let answer = Answer {
                jsonrpc: "2.0",
                result: a - b,
                id: request.id,
            };
            nats.publish(reply, serde_json::to_vec(&answer)?.into())
                .await?;
        }
        Ok(())
    })
}
