//! The resource types the double serves: their REST names, kinds, scope and which
//! subresources they have. One table drives routing, discovery and the store.

/// One served resource type (`deployments.apps/v1`, `pods/v1`, ...).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ResourceType {
    /// API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    /// Has a `/status` subresource: the main resource ignores status writes and vice versa.
    pub status_subresource: bool,
    /// Has a `/scale` subresource (autoscaling/v1 `Scale` over `spec.replicas`).
    pub scale_subresource: bool,
    /// `metadata.generation` is kept and bumped on spec changes.
    pub generation: bool,
    /// DELETE answers the deleted object instead of a success `Status`, as the apiserver's
    /// registries with `ReturnDeletedObject` do.
    pub return_deleted_object: bool,
    pub short_names: &'static [&'static str],
}

const fn rt(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
) -> ResourceType {
    ResourceType {
        group,
        version,
        plural,
        singular,
        kind,
        namespaced: true,
        status_subresource: false,
        scale_subresource: false,
        generation: false,
        return_deleted_object: false,
        short_names: &[],
    }
}

pub static RESOURCES: &[ResourceType] = &[
    ResourceType {
        namespaced: false,
        status_subresource: true,
        return_deleted_object: true,
        short_names: &["ns"],
        ..rt("", "v1", "namespaces", "namespace", "Namespace")
    },
    ResourceType {
        short_names: &["sa"],
        ..rt("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount")
    },
    rt("", "v1", "secrets", "secret", "Secret"),
    ResourceType { short_names: &["cm"], ..rt("", "v1", "configmaps", "configmap", "ConfigMap") },
    ResourceType {
        status_subresource: true,
        return_deleted_object: true,
        short_names: &["svc"],
        ..rt("", "v1", "services", "service", "Service")
    },
    ResourceType {
        status_subresource: true,
        return_deleted_object: true,
        short_names: &["po"],
        ..rt("", "v1", "pods", "pod", "Pod")
    },
    ResourceType { short_names: &["ev"], ..rt("", "v1", "events", "event", "Event") },
    ResourceType {
        status_subresource: true,
        scale_subresource: true,
        generation: true,
        short_names: &["deploy"],
        ..rt("apps", "v1", "deployments", "deployment", "Deployment")
    },
    ResourceType {
        status_subresource: true,
        scale_subresource: true,
        generation: true,
        short_names: &["rs"],
        ..rt("apps", "v1", "replicasets", "replicaset", "ReplicaSet")
    },
    ResourceType {
        status_subresource: true,
        generation: true,
        short_names: &["hpa"],
        ..rt(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            "HorizontalPodAutoscaler",
        )
    },
    ResourceType {
        generation: true,
        short_names: &["netpol"],
        ..rt("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy")
    },
    ResourceType {
        status_subresource: true,
        generation: true,
        short_names: &["pdb"],
        ..rt("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget")
    },
];

impl ResourceType {
    /// `deployments.apps`, or `pods` for the core group: how error messages name a resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_owned()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Deployment.apps`, or `Pod`: how validation errors name a kind.
    pub fn kind_qualified(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_owned()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

/// The type served at `group/version/plural`.
pub fn by_path(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The type of `kind` in `api_version` (`apps/v1`, `v1`).
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    RESOURCES.iter().find(|r| r.kind == kind && r.api_version() == api_version)
}

pub fn namespaces() -> &'static ResourceType {
    by_path("", "v1", "namespaces").expect("namespaces are served")
}

pub fn pods() -> &'static ResourceType {
    by_path("", "v1", "pods").expect("pods are served")
}

pub fn deployments() -> &'static ResourceType {
    by_path("apps", "v1", "deployments").expect("deployments are served")
}

pub fn replicasets() -> &'static ResourceType {
    by_path("apps", "v1", "replicasets").expect("replicasets are served")
}

pub fn events() -> &'static ResourceType {
    by_path("", "v1", "events").expect("events are served")
}

#[cfg(test)]
pub fn configmaps_for_tests() -> &'static ResourceType {
    by_path("", "v1", "configmaps").expect("configmaps are served")
}
