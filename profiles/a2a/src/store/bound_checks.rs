//! Checks of a bound that every durable store's own tests run against it.

use super::{PushConfigStore, StoreError, TaskStore};
use crate::push::TaskPushNotificationConfig;
use crate::types::{Task, TaskState, TaskStatus};

fn task(id: &str, state: TaskState) -> Task {
    Task {
        id: id.into(),
        status: TaskStatus {
            state,
            ..Default::default()
        },
        ..Task::default()
    }
}

/// `store`, empty and bounded to 2 tasks (`StoreLimits::max_tasks`), makes room from
/// finished tasks only, their push configs with them, refuses a new task when none is
/// finished, and always takes an update of a task it holds.
pub(super) async fn a_full_store_makes_room_from_finished_tasks_only(
    store: &(impl TaskStore + PushConfigStore),
) {
    assert_eq!(store.put(task("a", TaskState::Working), None).await, Ok(()));
    assert_eq!(
        store.put(task("b", TaskState::Completed), None).await,
        Ok(())
    );
    store
        .save_configs("b", vec![TaskPushNotificationConfig::default()])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The finished one makes room, its push configs with it.
    assert_eq!(store.put(task("c", TaskState::Working), None).await, Ok(()));
    assert_eq!(store.get("b").await, Ok(None));
    assert_eq!(store.load_configs("b").await, Ok(Vec::new()));
    assert_eq!(
        store.put(task("d", TaskState::Working), None).await,
        Err(StoreError::Full)
    );
    assert_eq!(store.get("d").await, Ok(None), "a refused task is not kept");
    // Updating a held task is always allowed.
    assert_eq!(
        store.put(task("a", TaskState::Completed), None).await,
        Ok(())
    );
}
