//! The client's typed calls beyond tools: resources, resource templates, prompts and
//! completion, each on the revision the client speaks.

use std::prelude::rust_2021::*;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::client::McpClient;
use super::client_config::McpError;

/// The most pages a list call follows (`nextCursor`).
const MAX_PAGES: usize = 1000;

/// A resource as `resources/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerResource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(rename = "mimeType", default)]
    pub mime_type: Option<String>,
}

/// A resource template as `resources/templates/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerResourceTemplate {
    /// Its RFC 6570 URI template.
    #[serde(rename = "uriTemplate")]
    pub uri_template: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// The MIME type of what it names.
    #[serde(rename = "mimeType", default)]
    pub mime_type: Option<String>,
}

/// One item of `resources/read`: text or Base64 `blob`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadContents {
    /// The URI read.
    pub uri: String,
    /// Its MIME type.
    #[serde(rename = "mimeType", default)]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default)]
    pub text: Option<String>,
    /// Binary contents, Base64.
    #[serde(default)]
    pub blob: Option<String>,
}

/// A prompt's argument as `prompts/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerPromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether the prompt needs it.
    #[serde(default)]
    pub required: bool,
}

/// A prompt as `prompts/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerPrompt {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Vec<ServerPromptArgument>,
}

/// One message of a `prompts/get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessageReceived {
    /// `user` or `assistant`.
    pub role: String,
    /// Its content block (`text`, `image`, `audio`, `resource`, `resource_link`).
    pub content: Value,
}

/// A `prompts/get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptResult {
    /// What the prompt is.
    #[serde(default)]
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessageReceived>,
}

/// A `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The suggested values.
    pub values: Vec<String>,
    /// How many there are in all, when the server says.
    #[serde(default)]
    pub total: Option<u64>,
    /// Whether there are more than `values`.
    #[serde(rename = "hasMore", default)]
    pub has_more: bool,
}

fn decode<T: DeserializeOwned>(what: &'static str, value: Value) -> Result<T, McpError> {
    serde_json::from_value(value).map_err(|source| McpError::Decode { what, source })
}

impl McpClient {
    /// Every item of a paged list (`member` of each page, following `nextCursor` for at most
    /// 1 000 pages).
    async fn list_all<T: DeserializeOwned>(
        &self,
        method: &'static str,
        member: &str,
    ) -> Result<Vec<T>, McpError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let mut page = self.request(method, params).await?;
            let list = page.get_mut(member).map(Value::take).unwrap_or(json!([]));
            items.extend(decode::<Vec<T>>(method, list)?);
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
                _ => break,
            }
        }
        Ok(items)
    }

    /// Every resource (`resources/list`).
    pub async fn list_resources(&self) -> Result<Vec<ServerResource>, McpError> {
        self.list_all("resources/list", "resources").await
    }

    /// Every resource template (`resources/templates/list`).
    pub async fn list_resource_templates(&self) -> Result<Vec<ServerResourceTemplate>, McpError> {
        self.list_all("resources/templates/list", "resourceTemplates")
            .await
    }

    /// `resources/read`: the resource's contents.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ReadContents>, McpError> {
        let mut result = self.request("resources/read", json!({"uri": uri})).await?;
        let contents = result
            .get_mut("contents")
            .map(Value::take)
            .unwrap_or_default();
        decode("resources/read", contents)
    }

    /// Every prompt (`prompts/list`).
    pub async fn list_prompts(&self) -> Result<Vec<ServerPrompt>, McpError> {
        self.list_all("prompts/list", "prompts").await
    }

    /// `prompts/get` with these arguments (an object of strings).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<PromptResult, McpError> {
        let arguments = serde_json::to_value(arguments)
            .map_err(|e| McpError::Call(rpcwire_tokio::CallError::Params(e)))?;
        let result = self
            .request("prompts/get", json!({"name": name, "arguments": arguments}))
            .await?;
        decode("prompts/get", result)
    }

    /// `completion/complete` for `reference` (`{"type": "ref/prompt", "name": ..}` or
    /// `{"type": "ref/resource", "uri": ..}`) and one argument's partial value.
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
    ) -> Result<Completion, McpError> {
        let mut result = self
            .request(
                "completion/complete",
                json!({"ref": reference, "argument": {"name": argument, "value": value}}),
            )
            .await?;
        let completion = result
            .get_mut("completion")
            .map(Value::take)
            .unwrap_or_default();
        decode("completion/complete", completion)
    }
}
