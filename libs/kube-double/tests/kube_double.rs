//! The double driven by the real `kube` client, as the Kubernetes provider will drive it.

mod kube_double {
    pub mod common;
    mod crud;
    mod deployments;
    mod faults;
    mod kubelet;
    mod namespaces;
    mod pods;
    mod watch;
}
