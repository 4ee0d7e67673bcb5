//! The tokio `McpClient` against the tokio `McpServer` over an in-memory pipe, on 2026-07-28
//! (`ClientOptions::stateless`) and on a session revision: a tool that asks for an
//! elicitation is answered by the client's typed handler (through `InputRequiredResult`
//! rounds, or the server's own `elicitation/create`), the rounds stop at
//! `max_input_rounds` and the input requests at `max_input_requests`, and the typed
//! resource, prompt and completion calls read what the server serves.
#![cfg(feature = "tokio")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rpcwire_mcp::tokio::{
    Answer, ClientHandlers, ClientOptions, Content, ElicitResult, InputRequired, McpClient,
    McpError, McpServer, PromptArgument, PromptMessage, ResourceContents, ResourceInfo,
    ToolContext, ToolError, ToolReply, ToolResult,
};
use serde_json::{json, Map, Value};

/// `book` asks for a date, then books; `nag` asks again and again (`asks` requests a round);
/// `runs` counts the tool runs.
fn server(runs: &Arc<AtomicUsize>, asks: usize) -> McpServer {
    let book_runs = Arc::clone(runs);
    let nag_runs = Arc::clone(runs);
    McpServer::new("client-test", "1.0")
        .tool_with_schema(
            "book",
            "Asks for a date, then books.",
            json!({"type": "object"}),
            move |ctx: ToolContext, _: Value| {
                book_runs.fetch_add(1, Ordering::SeqCst);
                async move {
                    let answer = ctx.input_response("when");
                    let date = answer.and_then(|a| a["content"]["date"].as_str());
                    let seats = answer.map(|a| a["content"]["seats"].clone());
                    Ok::<ToolReply, ToolError>(match (date, seats) {
                        (Some(date), Some(seats)) => {
                            ToolResult::text(format!("booked {date} for {seats}")).into()
                        }
                        _ => InputRequired::new()
                            .elicit(
                                "when",
                                "Which date?",
                                json!({"type": "object", "properties": {
                                    "date": {"type": "string"},
                                    "seats": {"type": "integer", "default": 2}}}),
                            )
                            .into(),
                    })
                }
            },
        )
        .tool_with_schema(
            "nag",
            "Never satisfied.",
            json!({"type": "object"}),
            move |_: ToolContext, _: Value| {
                nag_runs.fetch_add(1, Ordering::SeqCst);
                async move {
                    let mut ask = InputRequired::new();
                    for i in 0..asks {
                        ask = ask.elicit(&format!("q{i}"), "Again?", json!({"type": "object"}));
                    }
                    Ok::<ToolReply, ToolError>(ask.into())
                }
            },
        )
        .resource(
            ResourceInfo::new("test://hello", "hello").mime_type("text/plain"),
            |_: ToolContext, uri: String| async move {
                Ok(Answer::Complete(vec![ResourceContents::text(
                    &uri,
                    "text/plain",
                    "hello there",
                )]))
            },
        )
        .prompt(
            "greet",
            "Greets someone.",
            vec![PromptArgument::required("name", "Who")],
            |_: ToolContext, args: Map<String, Value>| async move {
                let name = args["name"].as_str().unwrap_or_default().to_owned();
                Ok(Answer::Complete(vec![PromptMessage::user(Content::text(
                    format!("Hello, {name}"),
                ))]))
            },
        )
        .completion(|_: ToolContext, _: Value| async move {
            Ok(vec!["alpha".to_owned(), "alps".to_owned()])
        })
}

/// Answers with the date only (the seats come from the schema's default, which the handlers
/// fill in), and records each question.
fn handlers(seen: &Arc<std::sync::Mutex<Vec<Value>>>) -> ClientHandlers {
    let seen = Arc::clone(seen);
    ClientHandlers::new().elicitation(move |request| {
        seen.lock()
            .unwrap()
            .push(json!({"message": request.message}));
        async move {
            let mut content = Map::new();
            content.insert("date".into(), json!("2026-08-01"));
            Ok(ElicitResult::accept(content))
        }
    })
}

async fn start(server: McpServer, options: ClientOptions) -> (McpClient, rpcwire_tokio::Session) {
    let (a, b) = tokio::io::duplex(64 << 10);
    let served = server.builder().run_io(a);
    let client = McpClient::connect_with(options, |builder| builder.run_io(b))
        .await
        .unwrap();
    (client, served)
}

#[tokio::test]
async fn stateless_client_answers_input_rounds_with_its_handler() {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::default();
    let options = ClientOptions {
        stateless: true,
        handlers: handlers(&seen),
        ..ClientOptions::default()
    };
    let (client, _served) = start(server(&runs, 1), options).await;
    assert!(client.is_stateless());
    assert_eq!(client.revision(), "2026-07-28");
    assert_eq!(
        client.initialize_result()["serverInfo"]["name"],
        "client-test"
    );
    let result = client.call_tool("book", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), "booked 2026-08-01 for 2");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "one round, then the answer");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn session_client_answers_the_servers_elicitation_with_the_same_handler() {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::default();
    let options = ClientOptions {
        handlers: handlers(&seen),
        ..ClientOptions::default()
    };
    let (client, _served) = start(server(&runs, 1), options).await;
    assert!(!client.is_stateless());
    assert_eq!(client.revision(), "2025-11-25");
    let result = client.call_tool("book", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), "booked 2026-08-01 for 2");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn input_rounds_stop_at_the_limit() {
    for limit in [0, 2] {
        let runs = Arc::new(AtomicUsize::new(0));
        let options = ClientOptions {
            stateless: true,
            handlers: handlers(&Arc::default()),
            max_input_rounds: limit,
            ..ClientOptions::default()
        };
        let (client, _served) = start(server(&runs, 1), options).await;
        let e = client.call_tool("nag", json!({})).await.unwrap_err();
        assert!(matches!(e, McpError::TooManyRounds(n) if n == limit), "{e}");
        // The first call and `limit` retries: no more.
        assert_eq!(runs.load(Ordering::SeqCst), limit + 1);
    }
}

#[tokio::test]
async fn input_requests_over_the_limit_are_refused_and_at_it_answered() {
    let runs = Arc::new(AtomicUsize::new(0));
    let options = ClientOptions {
        stateless: true,
        handlers: handlers(&Arc::default()),
        max_input_requests: 3,
        max_input_rounds: 1,
        ..ClientOptions::default()
    };
    // At the limit: answered (and asked again, so the rounds' limit ends it).
    let (client, _served) = start(server(&runs, 3), options.clone()).await;
    let e = client.call_tool("nag", json!({})).await.unwrap_err();
    assert!(matches!(e, McpError::TooManyRounds(1)), "{e}");
    // One over: refused before any handler runs or any retry goes out.
    let runs = Arc::new(AtomicUsize::new(0));
    let (client, _served) = start(server(&runs, 4), options).await;
    let e = client.call_tool("nag", json!({})).await.unwrap_err();
    assert!(matches!(e, McpError::BadInputRequest(_)), "{e}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn typed_resource_prompt_and_completion_calls_on_both_revisions() {
    for stateless in [false, true] {
        let options = ClientOptions {
            stateless,
            ..ClientOptions::default()
        };
        let (client, _served) = start(server(&Arc::default(), 1), options).await;
        let resources = client.list_resources().await.unwrap();
        assert_eq!(resources.len(), 1);
        assert_eq!(resources[0].uri, "test://hello");
        let contents = client.read_resource("test://hello").await.unwrap();
        assert_eq!(contents[0].text.as_deref(), Some("hello there"));
        let prompts = client.list_prompts().await.unwrap();
        assert_eq!(prompts[0].name, "greet");
        assert!(prompts[0].arguments[0].required);
        let prompt = client
            .get_prompt("greet", json!({"name": "Ada"}))
            .await
            .unwrap();
        assert_eq!(prompt.messages[0].role, "user");
        assert_eq!(prompt.messages[0].content["text"], "Hello, Ada");
        let completion = client
            .complete(json!({"type": "ref/prompt", "name": "greet"}), "name", "al")
            .await
            .unwrap();
        assert_eq!(completion.values, ["alpha", "alps"]);
    }
}
