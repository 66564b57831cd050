//! Container logs behind `pods/{name}/log`: written by the simulated pods (a crash loop's
//! lines), by the kubelet double (a process's stdout and stderr) and by tests.

use std::collections::HashMap;

use parking_lot::Mutex;

#[derive(Debug, Default, Clone)]
struct ContainerLog {
    current: Vec<String>,
    previous: Option<Vec<String>>,
}

/// Logs by (namespace, pod, container).
#[derive(Debug, Default)]
pub struct Logs {
    logs: Mutex<HashMap<(String, String, String), ContainerLog>>,
}

fn key(ns: &str, pod: &str, container: &str) -> (String, String, String) {
    (ns.to_owned(), pod.to_owned(), container.to_owned())
}

impl Logs {
    pub fn append(&self, ns: &str, pod: &str, container: &str, line: &str) {
        self.logs.lock().entry(key(ns, pod, container)).or_default().current.push(line.to_owned());
    }

    /// Sets both the current and the previous instance's log (a simulated crash loop, whose
    /// every run prints the same lines).
    pub fn set_crashing(&self, ns: &str, pod: &str, container: &str, lines: &[String]) {
        let log = ContainerLog { current: lines.to_vec(), previous: Some(lines.to_vec()) };
        self.logs.lock().insert(key(ns, pod, container), log);
    }

    /// A container starting again: its current log becomes the previous instance's.
    pub fn rotate(&self, ns: &str, pod: &str, container: &str) {
        let mut logs = self.logs.lock();
        let log = logs.entry(key(ns, pod, container)).or_default();
        log.previous = Some(std::mem::take(&mut log.current));
    }

    /// The lines of the current (or previous) instance; `None` when there was no previous one.
    pub fn read(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
        previous: bool,
    ) -> Option<Vec<String>> {
        let logs = self.logs.lock();
        let log = logs.get(&key(ns, pod, container));
        if previous {
            log.and_then(|l| l.previous.clone())
        } else {
            Some(log.map(|l| l.current.clone()).unwrap_or_default())
        }
    }

    pub fn forget_pod(&self, ns: &str, pod: &str) {
        self.logs.lock().retain(|(n, p, _), _| !(n == ns && p == pod));
    }
}
