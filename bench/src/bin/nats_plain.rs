//! The reference of the `nats` bench: a plain `async-nats` request/reply loop that answers
//! `subtract` with serde_json (the request parsed into a struct, the answer serialized from
//! one), in one queue group, on one worker thread, each message answered in the loop itself.
//!
//! With `service` after the subject, the same loop takes its messages from an endpoint of
//! `async-nats`'s service module and answers with its `Request::respond` (which counts them
//! for `$SRV.STATS`), as `rpcwire serve --nats` does: the share of that bookkeeping.
//!
//! Usage: `nats-plain URL SUBJECT [service]`; prints `ready` on stderr once subscribed.

use async_nats::service::ServiceExt;
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

fn main() -> Result<(), async_nats::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, subject, service) = match args.as_slice() {
        [url, subject] => (url, subject, false),
        [url, subject, s] if s == "service" => (url, subject, true),
        _ => return Err("usage: nats-plain URL SUBJECT [service]".into()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let nats = async_nats::connect(url.as_str()).await?;
        if service {
            let service = nats.service_builder().start("plain", "1.0.0").await?;
            let mut endpoint = service.endpoint(subject.as_str()).await?;
            nats.flush().await?;
            eprintln!("ready");
            while let Some(request) = endpoint.next().await {
                if let Some(answer) = answer(&request.message.payload) {
                    request.respond(Ok(answer.into())).await?;
                }
            }
            return Ok(());
        }
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

/// The answer to a `subtract` request, with serde_json.
fn answer(payload: &[u8]) -> Option<Vec<u8>> {
    let request = serde_json::from_slice::<Request<'_>>(payload).ok()?;
    if request.method != "subtract" {
        return None;
    }
    let (a, b) = request.params;
    serde_json::to_vec(&Answer {
        jsonrpc: "2.0",
        result: a - b,
        id: request.id,
    })
    .ok()
}
