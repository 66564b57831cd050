//! Defaulting the apiserver applies on write, limited to the fields a client is likely to
//! read back (a Deployment's strategy and deadlines, a pod's restart policy and grace
//! period, a Service's cluster IP, a Secret's `stringData`), so the stored object looks like
//! one a cluster returns.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::resources::ResourceType;

/// Fills in defaults on `obj` (a full object about to be stored). `ordinal` numbers
/// cluster IPs.
pub fn apply(rt: &ResourceType, obj: &mut Value, ordinal: u64) {
    match rt.plural {
        "namespaces" => namespace(obj),
        "secrets" => secret(obj),
        "services" => service(obj, ordinal),
        "pods" => pod_spec(obj.get_mut("spec")),
        "deployments" => deployment(obj),
        "replicasets" => {
            set_default(obj, "/spec/replicas", json!(1));
            pod_spec(obj.pointer_mut("/spec/template/spec"));
        }
        "horizontalpodautoscalers" => set_default(obj, "/spec/minReplicas", json!(1)),
        _ => {}
    }
}

fn namespace(obj: &mut Value) {
    let name = crate::store::meta::name(obj).to_owned();
    let labels = crate::store::meta::metadata_mut(obj)
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
    set_default(obj, "/spec/finalizers", json!(["kubernetes"]));
    set_default(obj, "/status/phase", json!("Active"));
}

/// `stringData` is write-only: merged into `data` (base64) and dropped, as the apiserver does.
fn secret(obj: &mut Value) {
    set_default(obj, "/type", json!("Opaque"));
    let Some(string_data) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    let Some(entries) = string_data.as_object() else { return };
    let engine = base64::engine::general_purpose::STANDARD;
    for (key, value) in entries {
        let text = value.as_str().unwrap_or_default();
        set(obj, &format!("/data/{key}"), json!(engine.encode(text)));
    }
}

fn service(obj: &mut Value, ordinal: u64) {
    set_default(obj, "/spec/type", json!("ClusterIP"));
    set_default(obj, "/spec/sessionAffinity", json!("None"));
    let headless = obj.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None");
    if !headless {
        let ip = format!("10.96.{}.{}", (ordinal / 250) % 250, ordinal % 250 + 1);
        set_default(obj, "/spec/clusterIP", json!(ip.clone()));
        set_default(obj, "/spec/clusterIPs", json!([ip]));
    }
    if let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
        for port in ports {
            let number = port.get("port").cloned().unwrap_or(Value::Null);
            set_default(port, "/protocol", json!("TCP"));
            set_default(port, "/targetPort", number);
        }
    }
    set_default(obj, "/status/loadBalancer", json!({}));
}

fn deployment(obj: &mut Value) {
    set_default(obj, "/spec/replicas", json!(1));
    set_default(obj, "/spec/revisionHistoryLimit", json!(10));
    set_default(obj, "/spec/progressDeadlineSeconds", json!(600));
    set_default(obj, "/spec/strategy/type", json!("RollingUpdate"));
    if obj.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("RollingUpdate") {
        set_default(obj, "/spec/strategy/rollingUpdate/maxSurge", json!("25%"));
        set_default(obj, "/spec/strategy/rollingUpdate/maxUnavailable", json!("25%"));
    }
    pod_spec(obj.pointer_mut("/spec/template/spec"));
}

fn pod_spec(spec: Option<&mut Value>) {
    let Some(spec) = spec else { return };
    set_default(spec, "/restartPolicy", json!("Always"));
    set_default(spec, "/terminationGracePeriodSeconds", json!(30));
    set_default(spec, "/dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "/schedulerName", json!("default-scheduler"));
    set_default(spec, "/securityContext", json!({}));
    if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
        for container in containers {
            let latest = container
                .get("image")
                .and_then(Value::as_str)
                .is_some_and(|i| !i.contains(':') || i.ends_with(":latest"));
            let policy = if latest { "Always" } else { "IfNotPresent" };
            set_default(container, "/imagePullPolicy", json!(policy));
            set_default(container, "/terminationMessagePath", json!("/dev/termination-log"));
            set_default(container, "/terminationMessagePolicy", json!("File"));
            set_default(container, "/resources", json!({}));
        }
    }
}

/// Sets `pointer` (creating parent objects) unless a non-null value is there.
pub fn set_default(obj: &mut Value, pointer: &str, value: Value) {
    if obj.pointer(pointer).is_none_or(Value::is_null) {
        set(obj, pointer, value);
    }
}

/// Sets `pointer`, creating parent objects as needed.
pub fn set(obj: &mut Value, pointer: &str, value: Value) {
    let mut current = obj;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if !current.is_object() {
            *current = Value::Object(Map::new());
        }
        let map = current.as_object_mut().expect("made an object above");
        if i == parts.len() - 1 {
            map.insert((*part).to_owned(), value);
            return;
        }
        current = map.entry((*part).to_owned()).or_insert_with(|| Value::Object(Map::new()));
    }
}
