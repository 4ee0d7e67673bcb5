//! What the server tests share: an agent's server on a loopback port.

use std::net::SocketAddr;

use rpcwire_a2a::{A2aServer, A2aService, Agent, AgentCapabilities, AgentCard, AgentInterface};

/// `agent`'s server, its card named `name`, built by `configure` and served on a loopback
/// port (its card offers streaming): its address, its JSON-RPC endpoint's URL, and the service.
pub async fn serve(
    name: &str,
    agent: impl Agent,
    configure: impl FnOnce(A2aServer) -> A2aServer,
) -> (SocketAddr, String, A2aService) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}/");
    let card = AgentCard {
        name: name.into(),
        supported_interfaces: vec![AgentInterface {
            url: url.clone(),
            protocol_binding: "JSONRPC".into(),
            protocol_version: "1.0".into(),
            ..AgentInterface::default()
        }],
        capabilities: AgentCapabilities {
            streaming: true,
            ..AgentCapabilities::default()
        },
        ..AgentCard::default()
    };
    let service = configure(A2aServer::new(card, agent)).build();
    tokio::spawn(rpcwire_a2a::serve(listener, service.clone()));
    (addr, url, service)
}
