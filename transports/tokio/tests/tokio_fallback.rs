//! The fallback handlers: a request or notification with no handler of its own reaches them
//! with its method name and raw params; registered methods are untouched.
#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use rpcwire_tokio::{Builder, CallError, Router, RpcError};
use serde_json::{json, Value};

#[tokio::test]
async fn fallbacks_take_what_no_handler_takes() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let notes = Arc::clone(&seen);
    let router = Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .fallback_method(|ctx, params| async move {
            if ctx.method() == "refuse" {
                return Err(RpcError::invalid_params("refused"));
            }
            let params: Value =
                params.map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
            Ok(json!({"method": ctx.method(), "params": params}))
        })
        .fallback_notification(move |ctx, params| {
            let text = format!(
                "{} {}",
                ctx.method(),
                params.map_or("-".into(), |p| p.get().to_owned())
            );
            notes.lock().unwrap().push(text);
            async {}
        });
    let (server, client) = Builder::new()
        .router(router)
        .duplex(Builder::new(), 64 << 10);
    let c = client.client();
    assert_eq!(c.call::<_, i64>("add", [2, 3]).await.unwrap(), 5);
    let got: Value = c.call("any/thing", json!({"x": [1]})).await.unwrap();
    assert_eq!(got, json!({"method": "any/thing", "params": {"x": [1]}}));
    let got: Value = c.call("no_params", ()).await.unwrap();
    assert_eq!(got, json!({"method": "no_params", "params": null}));
    let err = c.call::<_, Value>("refuse", ()).await.unwrap_err();
    assert!(
        matches!(&err, CallError::Rpc(e) if e.code == -32602),
        "{err:?}"
    );
    c.notify("note", [1]).await.unwrap();
    c.notify("bare", ()).await.unwrap();
    // Answered after both notifications: they have been handled by then.
    assert_eq!(c.call::<_, i64>("add", [1, 1]).await.unwrap(), 2);
    assert_eq!(*seen.lock().unwrap(), ["note [1]", "bare -"]);
    client.join().await.unwrap();
    server.join().await.unwrap();
}
