//! The push notification config messages of `a2a.proto` in their JSON form (camelCase, the
//! proto field names read too), apart from the deliveries so that the message types can name
//! them without a cycle between the modules.

use serde::{Deserialize, Serialize};

/// How a delivery authenticates to the webhook (`AuthenticationInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AuthenticationInfo {
    /// The HTTP scheme (`Bearer`, `Basic`).
    #[serde(default)]
    pub scheme: String,
    /// What follows it in `Authorization`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub credentials: String,
}

/// Where and how a task's events are pushed (`TaskPushNotificationConfig`), also the params
/// of `CreateTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The tenant (unused here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The config's id within its task (given by the server when the client gives none).
    #[serde(default)]
    pub id: String,
    /// The task.
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    /// The webhook (`http://` or `https://`).
    #[serde(default)]
    pub url: String,
    /// Sent as `X-A2A-Notification-Token` with each delivery.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// Sent as `Authorization` with each delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig` params.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigRequest {
    /// The tenant (unused here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    /// The config.
    #[serde(default)]
    pub id: String,
}

/// `ListTaskPushNotificationConfigs` params.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPushConfigsRequest {
    /// The tenant (unused here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    /// Ignored: a task has at most `PushLimits::max_per_task` configs, all on one page.
    #[serde(default, alias = "page_size", skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// Ignored (see `page_size`).
    #[serde(
        default,
        alias = "page_token",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
}

/// The answer to `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPushConfigsResponse {
    /// The task's configs.
    #[serde(default)]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// Always empty: one page.
    #[serde(default)]
    pub next_page_token: String,
}
