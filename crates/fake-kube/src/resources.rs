//! The resource types the fake serves: Basalt's eleven custom resources (group `basalt.dev`,
//! version `v1alpha1`, plurals as kube-derive spells them) and Events (`events.k8s.io/v1`, which
//! kube's `Recorder` writes, and core `v1`). Owns the table and the URL shapes of a type; knows
//! nothing of stored objects.

/// One served resource type: a namespaced collection under a group and version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceType {
    /// `group/version`, or `v1` for the core group.
    pub api_version: &'static str,
    /// The collection's URL segment, e.g. `trackedtables`.
    pub plural: &'static str,
    /// The objects' `kind`, e.g. `TrackedTable`.
    pub kind: &'static str,
    /// Whether `status` is a subresource: writes to the object leave `status` alone and
    /// writes to `…/status` change nothing else, as for a CRD with `subresources.status`.
    pub status_subresource: bool,
    /// A custom resource: the API server refuses strategic merge patches of these (415).
    pub custom: bool,
}

const fn basalt(plural: &'static str, kind: &'static str) -> ResourceType {
    ResourceType {
        api_version: "basalt.dev/v1alpha1",
        plural,
        kind,
        status_subresource: true,
        custom: true,
    }
}

const fn events(api_version: &'static str) -> ResourceType {
    ResourceType {
        api_version,
        plural: "events",
        kind: "Event",
        status_subresource: false,
        custom: false,
    }
}

/// Every type the fake serves; any other collection answers 404.
pub const RESOURCE_TYPES: &[ResourceType] = &[
    basalt("trackedtables", "TrackedTable"),
    basalt("permissions", "Permission"),
    basalt("trackedfunctions", "TrackedFunction"),
    basalt("logicalmodels", "LogicalModel"),
    basalt("nativequeries", "NativeQuery"),
    basalt("crontriggers", "CronTrigger"),
    basalt("computedfields", "ComputedField"),
    basalt("eventtriggers", "EventTrigger"),
    basalt("remoteschemas", "RemoteSchema"),
    basalt("actions", "Action"),
    basalt("customtypesets", "CustomTypeSet"),
    basalt("querycollections", "QueryCollection"),
    basalt("allowlistentries", "AllowListEntry"),
    basalt("restendpoints", "RestEndpoint"),
    basalt("inheritedroles", "InheritedRole"),
    basalt("apilimitpolicies", "ApiLimitPolicy"),
    events("events.k8s.io/v1"),
    events("v1"),
];

impl ResourceType {
    /// The type of objects with this `apiVersion` and `kind`.
    pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
        RESOURCE_TYPES
            .iter()
            .find(|t| t.api_version == api_version && t.kind == kind)
    }

    /// The type served at `…/<api_version>/…/<plural>`.
    pub fn by_plural(api_version: &str, plural: &str) -> Option<&'static ResourceType> {
        RESOURCE_TYPES
            .iter()
            .find(|t| t.api_version == api_version && t.plural == plural)
    }

    /// Position in [`RESOURCE_TYPES`]: the first part of a stored object's key.
    pub(crate) fn index(&self) -> usize {
        RESOURCE_TYPES
            .iter()
            .position(|t| t == self)
            .unwrap_or(usize::MAX)
    }

    /// The collection's path in `namespace`, or across all namespaces with `None`:
    /// `/apis/basalt.dev/v1alpha1/namespaces/default/trackedtables`.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let root = if self.api_version.contains('/') {
            format!("/apis/{}", self.api_version)
        } else {
            format!("/api/{}", self.api_version)
        };
        match namespace {
            Some(ns) => format!("{root}/namespaces/{ns}/{}", self.plural),
            None => format!("{root}/{}", self.plural),
        }
    }
}

/// What a request path names: a collection (in one namespace or all), or one object, or one
/// object's status subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) resource: &'static ResourceType,
    /// `None`: every namespace (list and watch only).
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    /// The path ends in `/status`.
    pub(crate) status: bool,
}

impl Target {
    /// Parses `/api/v1/…` and `/apis/<group>/<version>/…` paths; `None` for anything else
    /// (answered with a 404 Status).
    pub(crate) fn parse(path: &str) -> Option<Target> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (api_version, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => ((*version).to_owned(), rest),
            ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
            _ => return None,
        };
        let (namespace, rest) = match rest {
            ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_owned()), rest),
            _ => (None, rest),
        };
        let (plural, name, status) = match rest {
            [plural] => (*plural, None, false),
            [plural, name] if namespace.is_some() => (*plural, Some(*name), false),
            [plural, name, "status"] if namespace.is_some() => (*plural, Some(*name), true),
            _ => return None,
        };
        let resource = ResourceType::by_plural(&api_version, plural)?;
        if status && !resource.status_subresource {
            return None;
        }
        Some(Target {
            resource,
            namespace,
            name: name.map(str::to_owned),
            status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_collections_objects_and_status() {
        let t = Target::parse("/apis/basalt.dev/v1alpha1/namespaces/shop/trackedtables").unwrap();
        assert_eq!(
            (t.resource.kind, t.namespace.as_deref(), t.name, t.status),
            ("TrackedTable", Some("shop"), None, false)
        );
        let t = Target::parse("/apis/basalt.dev/v1alpha1/namespaces/shop/permissions/p/status")
            .unwrap();
        assert_eq!((t.name.as_deref(), t.status), (Some("p"), true));
        let t = Target::parse("/apis/basalt.dev/v1alpha1/allowlistentries").unwrap();
        assert_eq!((t.resource.kind, t.namespace), ("AllowListEntry", None));
        let t = Target::parse("/api/v1/namespaces/default/events/e1").unwrap();
        assert_eq!(
            (t.resource.api_version, t.name.as_deref()),
            ("v1", Some("e1"))
        );
        assert_eq!(
            t.resource.collection_path(Some("default")),
            "/api/v1/namespaces/default/events"
        );
    }

    #[test]
    fn unknown_paths_are_not_targets() {
        for path in [
            "/",
            "/version",
            "/apis/basalt.dev/v1alpha1/namespaces/shop/widgets",
            "/apis/basalt.dev/v1beta1/namespaces/shop/trackedtables",
            "/apis/basalt.dev/v1alpha1/namespaces/shop/trackedtables/a/scale",
            "/apis/events.k8s.io/v1/namespaces/shop/events/e/status",
            "/apis/basalt.dev/v1alpha1/trackedtables/a",
        ] {
            assert_eq!(Target::parse(path), None, "{path}");
        }
    }
}
