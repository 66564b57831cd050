//! The kubeconfig a client under test loads to reach the double (cluster URL, bearer token,
//! one context), so the provider's own kubeconfig loading is exercised too.

/// The kubeconfig YAML for `url` with `token`, its one context named `context`.
pub fn render(url: &str, token: &str, context: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {context}
  cluster:
    server: {url}
users:
- name: {context}
  user:
    token: {token}
contexts:
- name: {context}
  context:
    cluster: {context}
    user: {context}
    namespace: default
current-context: {context}
preferences: {{}}
"
    )
}
