//! The [`RedisTaskStore`](super::RedisTaskStore)'s listening connection: one pub/sub
//! connection per store, subscribed to `P:events` and `P:cancel`, whose messages wake the
//! streams here that follow a task's log ([`Watchers`]) and carry cancellations; reconnected
//! while it is down (the streams poll meanwhile).

use std::sync::Weak;
use std::time::Duration;

use futures_util::StreamExt;

use super::redis_wire::{Keys, RedisError};
use super::watchers::Watchers;

/// A pub/sub connection subscribed to the store's two channels, within `timeout`.
pub(super) async fn subscribe(
    client: &::redis::Client,
    keys: &Keys,
    timeout: Duration,
) -> Result<::redis::aio::PubSub, RedisError> {
    let subscribed = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(&keys.events).await?;
        pubsub.subscribe(&keys.cancel).await?;
        Ok::<_, RedisError>(pubsub)
    };
    tokio::time::timeout(timeout, subscribed)
        .await
        .map_err(|_| {
            RedisError::Redis(::redis::RedisError::from(std::io::Error::from(
                std::io::ErrorKind::TimedOut,
            )))
        })?
}

/// Hands what the pub/sub connection hears to `watchers` until the store is gone,
/// reconnecting every `retry` while it is down (the streams poll meanwhile).
pub(super) async fn listen(
    client: ::redis::Client,
    first: ::redis::aio::PubSub,
    watchers: Weak<Watchers>,
    keys: Keys,
    retry: Duration,
    timeout: Duration,
) {
    let mut pubsub = Some(first);
    loop {
        if let Some(connected) = pubsub.take() {
            let mut messages = connected.into_on_message();
            loop {
                // A quiet channel is looked at every `retry`: the task ends (and its
                // connection closes) soon after the store is dropped.
                let next =
                    tokio::time::timeout(retry.max(Duration::from_millis(10)), messages.next());
                let msg = match next.await {
                    Err(_) if watchers.strong_count() == 0 => return,
                    Err(_) => continue,
                    Ok(None) => break,
                    Ok(Some(msg)) => msg,
                };
                let Some(w) = watchers.upgrade() else { return };
                let Ok(payload) = std::str::from_utf8(msg.get_payload_bytes()) else {
                    continue;
                };
                if msg.get_channel_name() == keys.cancel {
                    // No server listening yet: nothing of ours to cancel.
                    let _ = w.cancels.send(payload.to_owned());
                } else {
                    w.heard(payload);
                }
            }
        }
        let Some(w) = watchers.upgrade() else { return };
        w.set_listening(false);
        drop(w);
        tracing::warn!("the Redis task store's pub/sub connection broke: its streams poll");
        tokio::time::sleep(retry).await;
        if let Ok(p) = subscribe(&client, &keys, timeout).await {
            let Some(w) = watchers.upgrade() else { return };
            w.set_listening(true);
            pubsub = Some(p);
        }
    }
}
