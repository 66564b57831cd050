use std::future::Future;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("tasks still running after the {deadline:?} drain deadline: {names:?}")]
    DrainTimeout { deadline: Duration, names: Vec<String> },
}

struct Task {
    name: String,
    handle: JoinHandle<()>,
}

/// Owns a service's background tasks: each has a name (for logs and drain reports) and a
/// cancellation token that is a child of the center's, so one call stops them all.
#[derive(Clone)]
pub struct TaskCenter {
    token: CancellationToken,
    tasks: std::sync::Arc<Mutex<Vec<Task>>>,
}

impl TaskCenter {
    pub fn new(parent: &CancellationToken) -> Self {
        Self { token: parent.child_token(), tasks: Default::default() }
    }

    /// The token tasks of this center should watch.
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Spawns `make(token)`; the task must return soon after its token is cancelled.
    pub fn spawn<F, Fut>(&self, name: impl Into<String>, make: F)
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let name = name.into();
        let future = make(self.token.child_token());
        let task_name = name.clone();
        let handle = tokio::spawn(async move {
            future.await;
            tracing::debug!(task = %task_name, "task finished");
        });
        let mut tasks = self.tasks.lock();
        tasks.retain(|t| !t.handle.is_finished());
        tasks.push(Task { name, handle });
    }

    /// Names of tasks still running.
    pub fn running(&self) -> Vec<String> {
        self.tasks
            .lock()
            .iter()
            .filter(|t| !t.handle.is_finished())
            .map(|t| t.name.clone())
            .collect()
    }

    /// Cancels every task and waits for them up to `deadline`; the stragglers are aborted and
    /// named in the error.
    pub async fn shutdown(&self, deadline: Duration) -> Result<(), TaskError> {
        self.token.cancel();
        let tasks: Vec<Task> = std::mem::take(&mut *self.tasks.lock());
        let started = tokio::time::Instant::now();
        let mut late = Vec::new();
        for mut task in tasks {
            let left = deadline.saturating_sub(started.elapsed());
            if tokio::time::timeout(left, &mut task.handle).await.is_err() {
                task.handle.abort();
                late.push(task.name);
            }
        }
        if late.is_empty() {
            Ok(())
        } else {
            Err(TaskError::DrainTimeout { deadline, names: late })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shutdown_cancels_and_names_stragglers() {
        let root = CancellationToken::new();
        let center = TaskCenter::new(&root);
        center.spawn("polite", |token| async move { token.cancelled().await });
        center.spawn("stubborn", |_token| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await
        });
        assert_eq!(center.running().len(), 2);
        let err = center.shutdown(Duration::from_millis(200)).await.unwrap_err();
        match err {
            TaskError::DrainTimeout { names, .. } => assert_eq!(names, vec!["stubborn"]),
        }
        assert!(center.running().is_empty());
    }

    #[tokio::test]
    async fn parent_cancellation_reaches_tasks() {
        let root = CancellationToken::new();
        let center = TaskCenter::new(&root);
        let (tx, rx) = tokio::sync::oneshot::channel();
        center.spawn("waiter", |token| async move {
            token.cancelled().await;
            let _ = tx.send(());
        });
        root.cancel();
        tokio::time::timeout(Duration::from_secs(5), rx).await.unwrap().unwrap();
    }
}
