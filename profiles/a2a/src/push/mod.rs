//! Push notifications: the task push notification configs clients create, get, list and
//! delete (bounded per task and in all; visible to whoever may see their task), and the
//! deliveries of a task's events to their webhooks — the event as a `StreamResponse`, with
//! the config's authentication (`Authorization: <scheme> <credentials>`) and token
//! (`X-A2A-Notification-Token`) — through a bounded queue per task (its events delivered in
//! order, one at a time; tasks delivered to at once up to a bound), retried with exponential
//! backoff, by the SSRF-safe client of [`webhook`].

pub(crate) mod config;
pub(crate) mod webhook;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use tokio::sync::{mpsc, Semaphore};

pub use config::{
    AuthenticationInfo, ListPushConfigsRequest, ListPushConfigsResponse, PushConfigRequest,
    TaskPushNotificationConfig,
};

use crate::types::{StreamResponse, TaskState};
use webhook::{WebhookError, WebhookPolicy};

/// The header carrying a config's `token` on each delivery.
pub const NOTIFICATION_TOKEN_HEADER: &str = "x-a2a-notification-token";

/// The limits of push notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushLimits {
    /// The most configs per task.
    pub max_per_task: usize,
    /// The most tasks with configs (a config for one more task is refused).
    pub max_tasks: usize,
    /// Deliveries waiting to be made, per task; beyond, a delivery is dropped (with a
    /// warning).
    pub queue: usize,
    /// Deliveries made at once (to different tasks' webhooks; one task's are in order).
    pub concurrency: usize,
    /// Attempts per delivery (at least 1).
    pub attempts: u32,
    /// The wait before the second attempt, doubled before each next one.
    pub backoff: Duration,
    /// How long one attempt may take.
    pub timeout: Duration,
}

impl Default for PushLimits {
    fn default() -> Self {
        PushLimits {
            max_per_task: 8,
            max_tasks: 10_000,
            queue: 64,
            concurrency: 16,
            attempts: 3,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Why a config was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConfigError {
    /// The webhook URL is refused.
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    /// A limit of [`PushLimits`].
    #[error("{0}")]
    Full(&'static str),
}

/// One delivery to make.
struct Delivery {
    url: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
}

/// The push notifications of one server.
pub(crate) struct Push {
    configs: Mutex<HashMap<String, Vec<TaskPushNotificationConfig>>>,
    policy: Arc<WebhookPolicy>,
    limits: PushLimits,
    /// The delivery queue of each task being delivered for, each with its worker (started
    /// in the server's runtime by the task's first delivery; it ends once its task is
    /// final and its queue drained).
    queues: Mutex<HashMap<String, mpsc::Sender<Delivery>>>,
    /// Deliveries made at once.
    slots: Arc<Semaphore>,
}

impl Push {
    pub(crate) fn new(policy: WebhookPolicy, limits: PushLimits) -> Self {
        Push {
            configs: Mutex::default(),
            policy: Arc::new(policy),
            limits,
            queues: Mutex::default(),
            slots: Arc::new(Semaphore::new(limits.concurrency.max(1))),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<TaskPushNotificationConfig>>> {
        self.configs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks `url` against the webhook policy (see [`webhook::check`]).
    pub(crate) async fn check(&self, url: &str) -> Result<(), ConfigError> {
        Ok(webhook::check(url, &self.policy).await?)
    }

    /// Adds (or replaces, by id) `config`, its webhook [`check`](Self::check)ed before.
    /// The configs of tasks no longer held (`held` says which are) are dropped when the
    /// table is full.
    pub(crate) fn insert(
        &self,
        mut config: TaskPushNotificationConfig,
        new_id: impl FnOnce() -> String,
        held: impl Fn(&str) -> bool,
    ) -> Result<TaskPushNotificationConfig, ConfigError> {
        if config.id.is_empty() {
            config.id = new_id();
        }
        let mut table = self.table();
        if !table.contains_key(&config.task_id) && table.len() >= self.limits.max_tasks {
            table.retain(|task, _| held(task));
        }
        if !table.contains_key(&config.task_id) && table.len() >= self.limits.max_tasks {
            return Err(ConfigError::Full(
                "too many tasks have push notification configs",
            ));
        }
        let list = table.entry(config.task_id.clone()).or_default();
        if let Some(held) = list.iter_mut().find(|c| c.id == config.id) {
            *held = config.clone();
        } else if list.len() >= self.limits.max_per_task {
            return Err(ConfigError::Full(
                "the task has as many push notification configs as it may",
            ));
        } else {
            list.push(config.clone());
        }
        Ok(config)
    }

    /// The tasks that have configs, when the table holds as many tasks as it may (those of
    /// tasks no longer held may then make room); none otherwise.
    pub(crate) fn tasks_when_full(&self) -> Vec<String> {
        let table = self.table();
        if table.len() < self.limits.max_tasks {
            return Vec::new();
        }
        table.keys().cloned().collect()
    }

    /// Task `task_id`'s configs, when its table has an entry for it (`None`: none known
    /// here; a store may have some).
    pub(crate) fn configs_of(&self, task_id: &str) -> Option<Vec<TaskPushNotificationConfig>> {
        self.table().get(task_id).cloned()
    }

    /// Puts back task `task_id`'s `configs` read from a store, when the table has room and
    /// no entry for it (what it has is newer).
    pub(crate) fn restore(&self, task_id: &str, configs: Vec<TaskPushNotificationConfig>) {
        let mut table = self.table();
        if configs.is_empty() || table.contains_key(task_id) || table.len() >= self.limits.max_tasks
        {
            return;
        }
        let mut configs = configs;
        configs.truncate(self.limits.max_per_task);
        table.insert(task_id.to_owned(), configs);
    }

    /// Config `id` of task `task_id`.
    pub(crate) fn get(&self, task_id: &str, id: &str) -> Option<TaskPushNotificationConfig> {
        self.table()
            .get(task_id)?
            .iter()
            .find(|c| c.id == id)
            .cloned()
    }

    /// Task `task_id`'s configs.
    pub(crate) fn list(&self, task_id: &str) -> Vec<TaskPushNotificationConfig> {
        self.table().get(task_id).cloned().unwrap_or_default()
    }

    /// Removes config `id` of task `task_id` (nothing when there is none).
    pub(crate) fn delete(&self, task_id: &str, id: &str) {
        let mut table = self.table();
        if let Some(list) = table.get_mut(task_id) {
            list.retain(|c| c.id != id);
            if list.is_empty() {
                table.remove(task_id);
                self.queues
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(task_id);
            }
        }
    }

    /// Queues the deliveries of `event` of task `task_id` to its webhooks.
    pub(crate) fn notify(&self, task_id: &str, event: &StreamResponse) {
        let configs = match self.table().get(task_id) {
            Some(list) => list.clone(),
            None => return,
        };
        let body = match serde_json::to_vec(event) {
            Ok(b) => Bytes::from(b),
            Err(_) => return,
        };
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = queues
            .entry(task_id.to_owned())
            .or_insert_with(|| self.start());
        for config in configs {
            let delivery = Delivery {
                headers: headers(&config),
                url: config.url,
                body: body.clone(),
            };
            if queue.try_send(delivery).is_err() {
                tracing::warn!(
                    task = task_id,
                    "the task's push notification queue is full: a delivery dropped"
                );
            }
        }
        if event.state().is_some_and(TaskState::is_terminal) {
            // Its worker delivers what is queued, then ends.
            queues.remove(task_id);
        }
    }

    /// A task's delivery queue and its worker: one delivery at a time, in order, each
    /// holding one of the server's delivery slots.
    fn start(&self) -> mpsc::Sender<Delivery> {
        let (tx, mut rx) = mpsc::channel::<Delivery>(self.limits.queue.max(1));
        let policy = Arc::clone(&self.policy);
        let limits = self.limits;
        let slots = Arc::clone(&self.slots);
        tokio::spawn(async move {
            while let Some(delivery) = rx.recv().await {
                let Ok(_slot) = slots.acquire().await else {
                    return;
                };
                deliver(delivery, &policy, limits).await;
            }
        });
        tx
    }
}

/// A delivery's headers: the config's authentication and token.
fn headers(config: &TaskPushNotificationConfig) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    if let Some(auth) = &config.authentication {
        let value = if auth.credentials.is_empty() {
            auth.scheme.clone()
        } else {
            format!("{} {}", auth.scheme, auth.credentials)
        };
        if let Ok(v) = HeaderValue::from_str(&value) {
            out.push((http::header::AUTHORIZATION, v));
        }
    }
    if !config.token.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&config.token) {
            out.push((HeaderName::from_static(NOTIFICATION_TOKEN_HEADER), v));
        }
    }
    out
}

/// Makes one delivery: the webhook resolved and checked at each attempt, the attempts
/// spaced by a doubling backoff; a URL refused is not retried.
async fn deliver(delivery: Delivery, policy: &WebhookPolicy, limits: PushLimits) {
    let mut wait = limits.backoff;
    for attempt in 1..=limits.attempts.max(1) {
        let result = match webhook::resolve(&delivery.url, policy).await {
            Ok(target) => {
                webhook::post(
                    &target,
                    &delivery.headers,
                    delivery.body.clone(),
                    limits.timeout,
                )
                .await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => return,
            Err(e @ (WebhookError::BadUrl(_) | WebhookError::Forbidden(_))) => {
                tracing::warn!(error = %e, "a push notification was not delivered");
                return;
            }
            Err(e) if attempt == limits.attempts.max(1) => {
                tracing::warn!(error = %e, attempt, "a push notification was not delivered");
            }
            Err(_) => {
                tokio::time::sleep(wait).await;
                wait = wait.saturating_mul(2);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(task: &str, id: &str) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            task_id: task.into(),
            id: id.into(),
            url: "http://93.184.216.34/".into(),
            ..TaskPushNotificationConfig::default()
        }
    }

    #[test]
    fn configs_are_bounded_per_task_and_in_all() {
        let push = Push::new(
            WebhookPolicy::public_only(),
            PushLimits {
                max_per_task: 2,
                max_tasks: 2,
                ..PushLimits::default()
            },
        );
        let all = |_: &str| true;
        let id = || "given".to_owned();
        assert!(push.insert(config("t1", "a"), id, all).is_ok());
        assert!(push.insert(config("t1", "b"), id, all).is_ok());
        assert!(matches!(
            push.insert(config("t1", "c"), id, all),
            Err(ConfigError::Full(_))
        ));
        // Replacing one by id is not one more.
        assert!(push.insert(config("t1", "a"), id, all).is_ok());
        assert_eq!(
            push.insert(config("t1", ""), id, all).err(),
            Some(ConfigError::Full(
                "the task has as many push notification configs as it may"
            ))
        );
        assert!(push.insert(config("t2", "a"), id, all).is_ok());
        assert!(matches!(
            push.insert(config("t3", "a"), id, all),
            Err(ConfigError::Full(_))
        ));
        // Room is made from the tasks no longer held.
        assert!(push.insert(config("t3", "a"), id, |t| t != "t1").is_ok());
        assert!(push.list("t1").is_empty());
        assert_eq!(push.list("t3")[0].id, "a");
        push.delete("t3", "a");
        push.delete("t3", "a");
        assert!(push.get("t3", "a").is_none());
    }

    #[test]
    fn delivery_headers() {
        let mut c = config("t", "a");
        c.token = "tok".into();
        c.authentication = Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: "s3cr3t".into(),
        });
        let h = headers(&c);
        assert_eq!(h[0].0, http::header::AUTHORIZATION);
        assert_eq!(h[0].1, "Bearer s3cr3t");
        assert_eq!(h[1].0.as_str(), NOTIFICATION_TOKEN_HEADER);
        // A value that is no header value is left out, not sent broken.
        c.token = "a\nb".into();
        assert_eq!(headers(&c).len(), 1);
    }

    /// A webhook on loopback that holds each request until `release` is notified, then
    /// answers 200; it counts the requests it got.
    async fn stalled_webhook(
        release: Arc<tokio::sync::Notify>,
    ) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let url = format!(
            "http://{}/hook",
            listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default()
        );
        let got = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = Arc::clone(&got);
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                release.notified().await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            }
        });
        (url, got)
    }

    #[tokio::test]
    async fn a_full_queue_drops_deliveries_instead_of_growing() {
        let release = Arc::new(tokio::sync::Notify::new());
        let (url, got) = stalled_webhook(Arc::clone(&release)).await;
        let push = Push::new(
            WebhookPolicy::public_only().allow([std::net::IpAddr::from([127, 0, 0, 1])]),
            PushLimits {
                queue: 2,
                concurrency: 1,
                attempts: 1,
                ..PushLimits::default()
            },
        );
        let mut c = config("t", "a");
        c.url = url;
        assert!(push.insert(c, String::new, |_| true).is_ok());
        let event = StreamResponse::Task(crate::types::Task {
            id: "t".into(),
            ..crate::types::Task::default()
        });
        // One taken by the worker (held by the webhook), two queued, the rest dropped.
        push.notify("t", &event);
        for _ in 0..200 {
            if got.load(std::sync::atomic::Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for _ in 0..5 {
            push.notify("t", &event);
        }
        // Released one by one (bounded): the queued two arrive, and nothing after them.
        for _ in 0..100 {
            release.notify_one();
            tokio::time::sleep(Duration::from_millis(20)).await;
            if got.load(std::sync::atomic::Ordering::SeqCst) >= 3 {
                break;
            }
        }
        release.notify_one();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            got.load(std::sync::atomic::Ordering::SeqCst),
            3,
            "1 in flight + 2 queued"
        );
    }
}
