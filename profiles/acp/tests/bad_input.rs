//! Bad input from either side ends in a clear error or is skipped and logged, never a hang:
//! garbage lines, messages over the limit (at the edge), unknown methods, responses to ids
//! never sent, the agent exiting mid-turn. Also: messages never hold a raw newline. Each side
//! under test faces a raw peer writing lines by hand over an in-memory pipe.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::time::Duration;

use rpcwire_acp::schema::{
    ContentBlock, InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse,
    PromptRequest, SessionUpdate, StopReason,
};
use rpcwire_acp::{
    AcpClient, AcpOptions, Agent, AgentServer, ClientHandlers, ClientOptions, RpcError,
    SessionHandle, TurnEvent,
};
use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

const TEXT: &str = "line one\nline two\r\nthree\u{2028}four\ttab \"quoted\" \\ end";

struct Probe;

impl Agent for Probe {
    async fn initialize(&self, r: InitializeRequest) -> Result<InitializeResponse, RpcError> {
        Ok(InitializeResponse::new(r.protocol_version))
    }
    async fn new_session(&self, _: NewSessionRequest) -> Result<NewSessionResponse, RpcError> {
        Ok(NewSessionResponse::new("s"))
    }
    async fn prompt(&self, s: SessionHandle, _: PromptRequest) -> Result<StopReason, RpcError> {
        s.message(TEXT).await?;
        Ok(StopReason::EndTurn)
    }
}

/// The raw side of a pipe: lines written and read by hand.
struct Raw {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

impl Raw {
    fn new(io: DuplexStream) -> Raw {
        let (r, w) = tokio::io::split(io);
        Raw {
            lines: BufReader::new(r).lines(),
            writer: w,
        }
    }

    async fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn recv_line(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("a line within 5 s")
            .expect("read")
            .expect("the peer closed")
    }

    async fn recv(&mut self) -> Value {
        let line = self.recv_line().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }
}

/// A request line of exactly `len` bytes (without its newline) for an unknown method.
fn padded(id: u32, len: usize) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x/pad","params":{{"p":""#);
    let tail = r#""}}"#;
    let pad = len - head.len() - tail.len();
    format!("{head}{}{tail}", "a".repeat(pad))
}

const LIMIT: usize = 4096;

fn agent_side() -> Raw {
    let (agent_io, raw_io) = tokio::io::duplex(1 << 16);
    let server = AgentServer::new(Probe).options(AcpOptions::new().max_message(LIMIT));
    let _session = server.builder().run_io(agent_io);
    Raw::new(raw_io)
}

#[tokio::test]
async fn the_agent_survives_bad_input_from_the_client() {
    let mut client = agent_side();
    client.send("garbage, not JSON").await;
    let reply = client.recv().await;
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], Value::Null);

    // A prompt before initialize: refused, clearly.
    client
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#)
        .await;
    let reply = client.recv().await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not initialized"));

    client
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}"#)
        .await;
    let reply = client.recv().await;
    assert_eq!(reply["result"]["protocolVersion"], 1, "{reply}");

    client
        .send(r#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#)
        .await;
    let reply = client.recv().await;
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!(3), json!(-32601))
    );

    // A response to an id the agent never sent: skipped (logged), nothing answered.
    client
        .send(r#"{"jsonrpc":"2.0","id":77,"result":{}}"#)
        .await;

    // A line of exactly the limit is read; one byte more is refused and skipped.
    client.send(&padded(4, LIMIT)).await;
    let reply = client.recv().await;
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!(4), json!(-32601)),
        "{reply}"
    );
    client.send(&padded(5, LIMIT + 1)).await;
    let reply = client.recv().await;
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(reply["error"]["data"], "frame too large", "{reply}");

    // A version this crate does not speak: answered with the one it does.
    client
        .send(r#"{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":7}}"#)
        .await;
    let reply = client.recv().await;
    assert_eq!(reply["result"]["protocolVersion"], 1, "{reply}");

    // The connection goes on: the next request is answered (and nothing came for id 77).
    client
        .send(r#"{"jsonrpc":"2.0","id":8,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#)
        .await;
    let reply = client.recv().await;
    assert_eq!(reply["id"], 8, "{reply}");
    assert_eq!(reply["result"]["sessionId"], "s");
}

#[tokio::test]
async fn messages_never_hold_a_raw_newline() {
    let mut client = agent_side();
    client
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#)
        .await;
    client.recv().await;
    client
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"go"}]}}"#)
        .await;
    // The update is one line (the reader splits on '\n' only) holding no '\r' either, and
    // its text comes back exact. (U+2028 is legal raw in JSON and no line break to an
    // ndjson reader, which splits on bytes.)
    let line = client.recv_line().await;
    assert!(!line.contains('\r'), "{line}");
    let update: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(update["method"], "session/update");
    assert_eq!(update["params"]["update"]["content"]["text"], TEXT);
    let reply = client.recv().await;
    assert_eq!(reply["result"]["stopReason"], "end_turn", "{reply}");
}

#[tokio::test]
async fn the_client_survives_bad_input_from_the_agent() {
    let (client_io, raw_io) = tokio::io::duplex(1 << 16);
    let mut agent = Raw::new(raw_io);
    let options = ClientOptions::default().acp(AcpOptions::new().max_message(LIMIT));
    let connect = tokio::spawn(AcpClient::connect(options, ClientHandlers::new(), |b| {
        b.run_io(client_io)
    }));
    let init = agent.recv().await;
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], 1);
    agent
        .send(&json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":1}}).to_string())
        .await;
    let client = connect.await.unwrap().expect("initialized");

    let new = tokio::spawn({
        let c = client.client().clone();
        async move {
            c.call::<_, Value>("session/new", json!({"cwd": "/", "mcpServers": []}))
                .await
        }
    });
    let request = agent.recv().await;
    agent
        .send(&json!({"jsonrpc":"2.0","id":request["id"],"result":{"sessionId":"s"}}).to_string())
        .await;
    new.await.unwrap().unwrap();

    let mut turn = client
        .prompt(PromptRequest::new("s", vec![ContentBlock::from("hi")]))
        .await
        .unwrap();
    let prompt = agent.recv().await;
    assert_eq!(prompt["method"], "session/prompt");

    agent.send("{not json").await;
    assert_eq!(agent.recv().await["error"]["code"], -32700);
    agent
        .send(r#"{"jsonrpc":"2.0","id":"a1","method":"agent/unknown","params":{}}"#)
        .await;
    let reply = agent.recv().await;
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!("a1"), json!(-32601))
    );
    agent
        .send(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#)
        .await;
    let big = "x".repeat(LIMIT);
    agent
        .send(
            &json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",
            "update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":big}}}})
            .to_string(),
        )
        .await;
    // An update this crate cannot decode (an unknown kind): logged and dropped.
    agent
        .send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"no_such_kind"}}}"#)
        .await;
    agent
        .send(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ok"}}}}"#)
        .await;
    // The agent goes away mid-turn.
    drop(agent);

    let mut texts = Vec::new();
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match turn.next().await {
                Some(Ok(TurnEvent::Update(SessionUpdate::AgentMessageChunk(c)))) => {
                    if let ContentBlock::Text(t) = c.content {
                        texts.push(t.text);
                    }
                }
                Some(Ok(other)) => panic!("unexpected {other:?}"),
                Some(Err(e)) => break e,
                None => panic!("the turn ended without an error"),
            }
        }
    })
    .await
    .expect("the client must not hang when the agent exits");
    assert_eq!(texts, ["ok"]);
    assert!(end.is_closed(), "{end:?}");
}

#[tokio::test]
async fn the_client_refuses_a_protocol_version_it_does_not_speak() {
    let (client_io, raw_io) = tokio::io::duplex(1 << 16);
    let mut agent = Raw::new(raw_io);
    let connect = tokio::spawn(AcpClient::connect(
        ClientOptions::default(),
        ClientHandlers::new(),
        |b| b.run_io(client_io),
    ));
    let init = agent.recv().await;
    agent
        .send(&json!({"jsonrpc":"2.0","id":init["id"],"result":{"protocolVersion":2}}).to_string())
        .await;
    let refused = tokio::time::timeout(Duration::from_secs(5), connect)
        .await
        .expect("no hang")
        .unwrap();
    assert!(
        matches!(refused, Err(rpcwire_acp::AcpError::UnsupportedVersion(2))),
        "{refused:?}"
    );
}
