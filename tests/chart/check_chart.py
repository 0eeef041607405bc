#!/usr/bin/env python3
"""Checks the Helm chart in charts/basalt without a cluster (docs/kubernetes.md, "Installing").

Lints the chart and renders it for a matrix of values with helm-python-sdk (Helm's Go SDK
through a C library: no helm binary, no network), validates every rendered object against
the Kubernetes 1.33 schemas with kubernetes-validate (strict), and asserts what the chart
promises: RBAC exactly matching the CRDs in crds/, service-account tokens only where the
Kubernetes API is used, consistent Secret references, probe paths and ports, which
Deployments exist, the engine settings passed through (metrics, tracing, streaming
subscriptions), BASALT_* variables spelled as in src/config.rs, and charts/basalt/crds/
being a byte copy of crds/.

Run from the repository root, with a Python that has tests/chart/requirements.txt installed:

    python3 -m venv /tmp/chartvenv
    /tmp/chartvenv/bin/pip install -r tests/chart/requirements.txt
    /tmp/chartvenv/bin/python tests/chart/check_chart.py

Each check prints `PASS name` or `FAIL name: detail`; the last line is `N passed, N failed`.
The exit code is 1 when a check failed.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

try:
    import helm_python as helm
    import kubernetes_validate
except ImportError as err:  # pragma: no cover - environment problem
    print(f"FAIL imports: {err} (pip install -r tests/chart/requirements.txt)")
    print("0 passed, 1 failed")
    sys.exit(1)

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "basalt"
CRDS = ROOT / "crds"
CHART_CRDS = CHART / "crds"
CONFIG_RS = ROOT / "src" / "config.rs"

RELEASE = "rel"
NAMESPACE = "basalt-system"
K8S_VERSION = "1.33.0"
DATABASE_URL = "postgres://basalt:not-a-password@db.example:5432/app"
ENGINE_PORT = 8080
PROBE_PORT = 8081

RESOURCE_VERBS = {"get", "list", "watch", "patch", "update"}
STATUS_VERBS = {"get", "patch", "update"}
FINALIZER_VERBS = {"update"}
EVENT_VERBS = {"create", "patch"}
# Variables the controller reads besides its BASALT_* flags (injected from the downward API).
DOWNWARD_ENV = {
    "POD_NAMESPACE": "metadata.namespace",
    "POD_NAME": "metadata.name",
    "POD_UID": "metadata.uid",
}
# The only rule of the Role that lets the controller report orphans as Events on its own Pod
# when the release namespace is not watched.
EVENTS_RULES = {("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch")}


def is_events_role(obj: dict[str, Any]) -> bool:
    """The controller's Role (or RoleBinding) for Events in the release namespace."""
    return obj["metadata"]["name"].endswith("-events")

PASSED = 0
FAILED = 0


def report(name: str, problems: list[str] | str | None) -> None:
    """Prints one check's outcome; `problems` empty or None means it passed."""
    global PASSED, FAILED
    if isinstance(problems, str):
        problems = [problems]
    if problems:
        FAILED += 1
        print(f"FAIL {name}: " + "; ".join(problems))
    else:
        PASSED += 1
        print(f"PASS {name}")


def run(name: str, fn: Callable[[], list[str] | str | None]) -> None:
    """Runs a check function; an exception is a failure, not a crash."""
    try:
        problems = fn()
    except Exception as err:  # noqa: BLE001 - every error is a finding here
        problems = [f"{type(err).__name__}: {err}"]
    report(name, problems)


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------------------------------------
# Facts read from the repository


def crd_plurals(directory: Path) -> list[str]:
    plurals = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                if doc["spec"]["group"] == "basalt.dev":
                    plurals.append(doc["spec"]["names"]["plural"])
    return sorted(plurals)


def config_env_names() -> set[str]:
    """Every `env = "BASALT_…"` in src/config.rs."""
    return set(re.findall(r'env\s*=\s*"(BASALT_[A-Z0-9_]+)"', CONFIG_RS.read_text()))


# ---------------------------------------------------------------------------------------------
# Rendering


class Rendered:
    """The objects one render produced, with lookups."""

    def __init__(self, values: dict[str, Any], chart_values: dict[str, Any], manifests: dict[str, str]):
        self.values = merge(chart_values, values)
        self.manifests = manifests
        self.objects: list[dict[str, Any]] = []
        for path, text in sorted(manifests.items()):
            if not path.endswith((".yaml", ".yml")):
                continue
            for doc in yaml.safe_load_all(text):
                if doc:
                    doc.setdefault("metadata", {})
                    self.objects.append(doc)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o.get("kind") == kind]

    def deployment(self, component: str) -> dict[str, Any] | None:
        found = [
            d
            for d in self.of_kind("Deployment")
            if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component
        ]
        return found[0] if len(found) == 1 else None

    def deployments(self, component: str) -> list[dict[str, Any]]:
        return [
            d
            for d in self.of_kind("Deployment")
            if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component
        ]


def container(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    for c in deployment["spec"]["template"]["spec"]["containers"]:
        if c["name"] == name:
            return c
    raise KeyError(f"no container {name} in Deployment {deployment['metadata']['name']}")


def env_map(c: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in c.get("env", [])}


def resolve_port(c: dict[str, Any], port: Any) -> int | None:
    if isinstance(port, int):
        return port
    for p in c.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    return None


# ---------------------------------------------------------------------------------------------
# Per-render checks


def check_validate(r: Rendered) -> list[str]:
    problems = []
    if not r.objects:
        return ["nothing rendered"]
    for obj in r.objects:
        ident = f"{obj.get('kind')}/{obj['metadata'].get('name')}"
        if obj.get("apiVersion") == "monitoring.coreos.com/v1":
            continue  # the Prometheus Operator's kind: see check_pod_monitor
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError as err:
            problems.append(f"{ident}: not a built-in kind ({err.message})")
        except kubernetes_validate.ValidationError as err:
            where = "/".join(str(p) for p in err.absolute_path)
            problems.append(f"{ident}: {where}: {err.message}")
    return problems


def expected_rules(plurals: list[str]) -> set[tuple[str, str, str]]:
    triples = set()
    for p in plurals:
        triples |= {("basalt.dev", p, v) for v in RESOURCE_VERBS}
        triples |= {("basalt.dev", f"{p}/status", v) for v in STATUS_VERBS}
        triples |= {("basalt.dev", f"{p}/finalizers", v) for v in FINALIZER_VERBS}
    triples |= {("events.k8s.io", "events", v) for v in EVENT_VERBS}
    return triples


def rule_triples(role: dict[str, Any]) -> tuple[set[tuple[str, str, str]], list[str]]:
    triples, problems = set(), []
    for rule in role.get("rules") or []:
        if rule.get("resourceNames") or rule.get("nonResourceURLs"):
            problems.append(f"unexpected resourceNames/nonResourceURLs in {rule}")
        for g in rule.get("apiGroups") or []:
            for res in rule.get("resources") or []:
                for v in rule.get("verbs") or []:
                    triples.add((g, res, v))
    return triples, problems


def describe_diff(got: set, want: set) -> str:
    parts = []
    if want - got:
        parts.append("missing " + ", ".join("/".join(t) for t in sorted(want - got)))
    if got - want:
        parts.append("extra " + ", ".join("/".join(t) for t in sorted(got - want)))
    return "; ".join(parts)


def controller_sa_name(r: Rendered) -> str | None:
    """The service account the controller runs as (engine's when embedded)."""
    c = r.values["controller"]
    if not c["enabled"]:
        return None
    component = "engine" if c["embedded"] else "controller"
    d = r.deployment(component)
    return d["spec"]["template"]["spec"].get("serviceAccountName") if d else None


def check_rbac(r: Rendered, plurals: list[str]) -> list[str]:
    c = r.values["controller"]
    roles, bindings = r.of_kind("Role"), r.of_kind("RoleBinding")
    croles, cbindings = r.of_kind("ClusterRole"), r.of_kind("ClusterRoleBinding")
    problems: list[str] = []
    if not c["enabled"]:
        if roles or bindings or croles or cbindings:
            problems.append("RBAC rendered although the controller is disabled")
        return problems
    subject_sa = controller_sa_name(r)
    if not subject_sa:
        problems.append("no Deployment carries the controller")
    sa_names = {sa["metadata"]["name"] for sa in r.of_kind("ServiceAccount")}
    if subject_sa and subject_sa not in sa_names:
        problems.append(f"service account {subject_sa} is not rendered")
    want = expected_rules(plurals)

    def check_pair(role: dict[str, Any], binding_list: list[dict[str, Any]], kind: str) -> None:
        name, ns = role["metadata"]["name"], role["metadata"].get("namespace")
        got, extra = rule_triples(role)
        problems.extend(extra)
        diff = describe_diff(got, EVENTS_RULES if is_events_role(role) else want)
        if diff:
            problems.append(f"{kind} {ns or ''}/{name}: {diff}")
        matching = [
            b
            for b in binding_list
            if b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}
            and b["metadata"].get("namespace") == ns
        ]
        if len(matching) != 1:
            problems.append(f"{kind} {ns or ''}/{name}: {len(matching)} bindings, expected 1")
            return
        subjects = matching[0].get("subjects") or []
        if subjects != [{"kind": "ServiceAccount", "name": subject_sa, "namespace": NAMESPACE}]:
            problems.append(f"binding of {kind} {name} has subjects {subjects}, expected SA {NAMESPACE}/{subject_sa}")

    if c["watchAllNamespaces"]:
        if roles or bindings:
            problems.append("Roles/RoleBindings rendered although watching all namespaces")
        if len(croles) != 1 or len(cbindings) != 1:
            problems.append(f"{len(croles)} ClusterRoles and {len(cbindings)} ClusterRoleBindings, expected 1 each")
        for role in croles:
            check_pair(role, cbindings, "ClusterRole")
    else:
        if croles or cbindings:
            problems.append("ClusterRole(Binding) rendered although not watching all namespaces")
        expected_ns = sorted(set(c["watchNamespaces"])) or [NAMESPACE]
        role_ns = sorted(role["metadata"].get("namespace") for role in roles if not is_events_role(role))
        binding_ns = sorted(b["metadata"].get("namespace") for b in bindings if not is_events_role(b))
        events_ns = sorted(role["metadata"].get("namespace") for role in roles if is_events_role(role))
        wanted_events_ns = [] if NAMESPACE in expected_ns else [NAMESPACE]
        if events_ns != wanted_events_ns:
            problems.append(f"Events Roles in {events_ns}, expected in {wanted_events_ns}")
        if role_ns != expected_ns:
            problems.append(f"Roles in {role_ns}, expected one in each of {expected_ns}")
        if binding_ns != expected_ns:
            problems.append(f"RoleBindings in {binding_ns}, expected one in each of {expected_ns}")
        for role in roles:
            check_pair(role, bindings, "Role")
    return problems


def check_watch_env(r: Rendered) -> list[str]:
    """The controller's namespace settings match the RBAC that was rendered."""
    c = r.values["controller"]
    if not c["enabled"]:
        return []
    d = r.deployment("engine" if c["embedded"] else "controller")
    if not d:
        return ["no Deployment carries the controller"]
    env = env_map(container(d, "engine" if c["embedded"] else "controller"))
    problems = []
    all_ns = env.get("BASALT_WATCH_ALL_NAMESPACES", {}).get("value")
    if c["watchAllNamespaces"]:
        if all_ns != "true":
            problems.append(f"BASALT_WATCH_ALL_NAMESPACES={all_ns!r}, expected 'true'")
    else:
        if all_ns not in (None, "false"):
            problems.append(f"BASALT_WATCH_ALL_NAMESPACES={all_ns!r}")
        listed = env.get("BASALT_WATCH_NAMESPACES", {}).get("value")
        role_ns = sorted(
            role["metadata"].get("namespace") for role in r.of_kind("Role") if not is_events_role(role)
        )
        if listed is None:
            if role_ns != [NAMESPACE]:
                problems.append("BASALT_WATCH_NAMESPACES unset but Roles are not just the release namespace")
        elif sorted(listed.split(",")) != role_ns:
            problems.append(f"BASALT_WATCH_NAMESPACES={listed!r} but Roles in {role_ns}")
    for var, path in DOWNWARD_ENV.items():
        got = env.get(var, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if got != path:
            problems.append(f"{var} should come from the downward API fieldPath {path}, got {got!r}")
    return problems


def check_service_accounts(r: Rendered) -> list[str]:
    embedded = r.values["controller"]["enabled"] and r.values["controller"]["embedded"]
    engine = r.deployment("engine")
    if not engine:
        return ["no engine Deployment"]
    pod = engine["spec"]["template"]["spec"]
    sa_name = pod.get("serviceAccountName")
    sas = {sa["metadata"]["name"]: sa for sa in r.of_kind("ServiceAccount")}
    if sa_name not in sas:
        return [f"engine service account {sa_name!r} is not rendered"]
    problems = []
    sa_auto = sas[sa_name].get("automountServiceAccountToken")
    pod_auto = pod.get("automountServiceAccountToken")
    if embedded:
        if sa_auto is False or pod_auto is False:
            problems.append("embedded controller but the engine's token is not mounted")
    else:
        if sa_auto is not False:
            problems.append(f"engine ServiceAccount automountServiceAccountToken={sa_auto!r}, expected false")
        if pod_auto not in (None, False):
            problems.append(f"engine pod automountServiceAccountToken={pod_auto!r}, expected false")
    ctrl = r.deployment("controller")
    if ctrl:
        csa = ctrl["spec"]["template"]["spec"].get("serviceAccountName")
        if csa == sa_name:
            problems.append("the controller runs as the engine's service account")
        if csa not in sas:
            problems.append(f"controller service account {csa!r} is not rendered")
        elif sas[csa].get("automountServiceAccountToken") is False:
            problems.append("the controller's service account does not mount a token")
    return problems


def check_secrets(r: Rendered) -> list[str]:
    v = r.values
    problems = []
    rendered: dict[str, set[str]] = {}
    for s in r.of_kind("Secret"):
        rendered[s["metadata"]["name"]] = set((s.get("data") or {}).keys()) | set(
            (s.get("stringData") or {}).keys()
        )
    # Existing Secrets the values name, with the keys the chart may read from each.
    existing: dict[str, set[str]] = {}
    if v["database"]["existingSecret"]:
        keys = {v["database"]["urlKey"]}
        if v["controller"]["databaseUrlKey"]:
            keys.add(v["controller"]["databaseUrlKey"])
        existing.setdefault(v["database"]["existingSecret"], set()).update(keys)
    if v["adminSecret"]["existingSecret"]:
        existing.setdefault(v["adminSecret"]["existingSecret"], set()).add(v["adminSecret"]["key"])
    if v["auth"]["existingSecret"]:
        existing.setdefault(v["auth"]["existingSecret"], set()).add(v["auth"]["jwtSecretKey"])
    for name in existing:
        if name in rendered:
            problems.append(f"the chart renders Secret {name}, which the values say already exists")

    for d in r.of_kind("Deployment"):
        pod = d["spec"]["template"]["spec"]
        for c in pod.get("containers", []) + pod.get("initContainers", []):
            where = f"{d['metadata']['name']}/{c['name']}"
            for e in c.get("env", []):
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if "value" in e and DATABASE_URL in str(e["value"]):
                    problems.append(f"{where}: {e['name']} holds the database URL in plain text")
                if not ref:
                    continue
                name, key = ref.get("name"), ref.get("key")
                if name in rendered:
                    if key not in rendered[name]:
                        problems.append(f"{where}: {e['name']} reads key {key!r} that Secret {name} lacks ({sorted(rendered[name])})")
                elif name in existing:
                    if key not in existing[name]:
                        problems.append(f"{where}: {e['name']} reads key {key!r} of existing Secret {name}, configured keys {sorted(existing[name])}")
                else:
                    problems.append(f"{where}: {e['name']} reads Secret {name!r}, neither rendered nor an existingSecret")
            for src in c.get("envFrom", []):
                sref = src.get("secretRef")
                if sref and sref.get("name") not in rendered and sref.get("name") not in existing:
                    problems.append(f"{where}: envFrom Secret {sref.get('name')!r} is unknown")

    # Which variables must come from a Secret.
    engine = r.deployment("engine")
    if engine:
        env = env_map(container(engine, "engine"))
        wanted = {"BASALT_DATABASE_URL": True}
        wanted["BASALT_ADMIN_SECRET"] = bool(v["adminSecret"]["value"] or v["adminSecret"]["existingSecret"])
        wanted["BASALT_JWT_SECRET"] = bool(v["auth"]["jwtSecret"] or v["auth"]["existingSecret"])
        for var, needed in wanted.items():
            present = var in env
            if needed and not (present and "secretKeyRef" in (env[var].get("valueFrom") or {})):
                problems.append(f"engine: {var} is not read from a Secret")
            if not needed and present:
                problems.append(f"engine: {var} set although not configured")
    ctrl = r.deployment("controller")
    if ctrl:
        env = env_map(container(ctrl, "controller"))
        if "secretKeyRef" not in (env.get("BASALT_DATABASE_URL", {}).get("valueFrom") or {}):
            problems.append("controller: BASALT_DATABASE_URL is not read from a Secret")
        for var in ("BASALT_ADMIN_SECRET", "BASALT_JWT_SECRET"):
            if var in env:
                problems.append(f"controller: gets {var}, which it does not use")
    direct = bool(v["controller"]["databaseUrlKey"] or v["controller"]["databaseUrl"])
    carrier = None
    if v["controller"]["enabled"]:
        carrier = r.deployment("engine") if v["controller"]["embedded"] else r.deployment("controller")
    if carrier:
        cname = carrier["spec"]["template"]["spec"]["containers"][0]["name"]
        env = env_map(container(carrier, cname))
        has = "secretKeyRef" in (env.get("BASALT_CONTROLLER_DATABASE_URL", {}).get("valueFrom") or {})
        if direct != has:
            problems.append(f"BASALT_CONTROLLER_DATABASE_URL from a Secret: {has}, expected {direct}")

    # The chart's Secret exists exactly when it has something to hold.
    inline = (
        (not v["database"]["existingSecret"] and (v["database"]["url"] or v["controller"]["databaseUrl"]))
        or (not v["adminSecret"]["existingSecret"] and v["adminSecret"]["value"])
        or (not v["auth"]["existingSecret"] and v["auth"]["jwtSecret"])
    )
    if bool(inline) != bool(rendered):
        problems.append(f"chart Secret rendered: {bool(rendered)}, expected {bool(inline)}")
    return problems


def probe_target(c: dict[str, Any], probe: dict[str, Any] | None) -> tuple[str, Any, int | None]:
    if not probe:
        return ("none", None, None)
    if "httpGet" in probe:
        return ("http", probe["httpGet"].get("path"), resolve_port(c, probe["httpGet"].get("port")))
    if "tcpSocket" in probe:
        return ("tcp", None, resolve_port(c, probe["tcpSocket"].get("port")))
    return ("other", None, None)


def check_metrics(r: Rendered) -> list[str]:
    """With metrics enabled the engine pods (and the controller's, on its probe port) carry the
    scrape annotations and /metrics is public; otherwise neither."""
    engine = r.deployment("engine")
    if not engine:
        return ["no engine Deployment"]
    enabled = bool(r.values.get("metrics", {}).get("enabled"))
    problems = []
    # The controller serves its metrics on its probe port.
    for component, deployment, port in [("engine", engine, ENGINE_PORT),
                                         ("controller", r.deployment("controller"), 8081)]:
        if not deployment:
            continue
        annotations = deployment["spec"]["template"]["metadata"].get("annotations") or {}
        want = {"prometheus.io/scrape": "true", "prometheus.io/port": str(port), "prometheus.io/path": "/metrics"}
        for key, value in want.items():
            got = annotations.get(key)
            if enabled and got != value:
                problems.append(f"{component} annotation {key}: {got!r}, want {value!r}")
            if not enabled and got is not None:
                problems.append(f"{component} annotation {key} present with metrics disabled")
    env = {e["name"]: e.get("value") for e in container(engine, "engine").get("env", [])}
    if env.get("BASALT_METRICS_PUBLIC") != ("true" if enabled else "false"):
        problems.append(f"BASALT_METRICS_PUBLIC={env.get('BASALT_METRICS_PUBLIC')!r} with metrics.enabled={enabled}")
    return problems


def check_pod_monitor(r: Rendered) -> list[str]:
    """With metrics.podMonitor enabled, one PodMonitor in the release namespace whose selector
    picks the engine pods and the controller's, and which scrapes /metrics on every pod's
    metrics port (engine: http; controller, own or embedded: probes) at the configured interval,
    with the configured labels; otherwise none."""
    wanted = r.values.get("metrics", {}).get("podMonitor", {})
    monitors = r.of_kind("PodMonitor")
    if not wanted.get("enabled"):
        return [f"{len(monitors)} PodMonitor(s) with metrics.podMonitor disabled"] if monitors else []
    if len(monitors) != 1:
        return [f"{len(monitors)} PodMonitors, want 1"]
    monitor = monitors[0]
    problems = []
    if monitor.get("apiVersion") != "monitoring.coreos.com/v1":
        problems.append(f"apiVersion {monitor.get('apiVersion')!r}")
    if monitor["metadata"].get("namespace") != NAMESPACE:
        problems.append(f"namespace {monitor['metadata'].get('namespace')!r}")
    labels = monitor["metadata"].get("labels") or {}
    for key, value in (wanted.get("labels") or {}).items():
        if labels.get(key) != value:
            problems.append(f"label {key}: {labels.get(key)!r}, want {value!r}")
    spec = monitor.get("spec", {})
    if spec.get("namespaceSelector") != {"matchNames": [NAMESPACE]}:
        problems.append(f"namespaceSelector {spec.get('namespaceSelector')!r}")
    selector = spec.get("selector", {}).get("matchLabels") or {}
    endpoints = spec.get("podMetricsEndpoints") or []
    by_port = {e.get("port"): e for e in endpoints}
    for e in endpoints:
        if e.get("path") != "/metrics":
            problems.append(f"endpoint {e.get('port')}: path {e.get('path')!r}")
        if e.get("interval") != wanted.get("interval"):
            problems.append(f"endpoint {e.get('port')}: interval {e.get('interval')!r}")
        if (e.get("scrapeTimeout") or "") != (wanted.get("scrapeTimeout") or ""):
            problems.append(f"endpoint {e.get('port')}: scrapeTimeout {e.get('scrapeTimeout')!r}")
    # Each workload: selected, and each of its metrics ports (by name, with its number) scraped.
    embedded = bool(r.values.get("controller", {}).get("embedded"))
    workloads = [("engine", "engine", {"http": ENGINE_PORT, **({"probes": 8081} if embedded else {})})]
    if r.deployment("controller"):
        workloads.append(("controller", "controller", {"probes": 8081}))
    for component, name, ports in workloads:
        deployment = r.deployment(component)
        if not deployment:
            problems.append(f"no {component} Deployment")
            continue
        pod_labels = deployment["spec"]["template"]["metadata"].get("labels") or {}
        if not selector or any(pod_labels.get(k) != v for k, v in selector.items()):
            problems.append(f"selector {selector!r} does not pick the {component} pods {pod_labels!r}")
        c = container(deployment, name)
        for port, number in ports.items():
            if resolve_port(c, port) != number:
                problems.append(f"{component}: port {port!r} is {resolve_port(c, port)}, want {number}")
            if port not in by_port:
                problems.append(f"{component}: port {port!r} not scraped")
    # Every endpoint names a port some selected pod has (or it scrapes nothing).
    for port in by_port:
        if not any(port in ports for _, _, ports in workloads):
            problems.append(f"endpoint port {port!r} is on no selected pod")
    return problems


def check_tracing(r: Rendered) -> list[str]:
    """With tracing.otlpEndpoint set, every Basalt container exports to it; otherwise none has
    an OTLP setting."""
    tracing = r.values.get("tracing", {})
    endpoint = tracing.get("otlpEndpoint") or ""
    problems = []
    deployments = r.of_kind("Deployment")
    if not deployments:
        return ["no Deployment"]
    for d in deployments:
        for c in d["spec"]["template"]["spec"]["containers"]:
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            where = f"{d['metadata']['name']}/{c['name']}"
            if endpoint:
                if env.get("BASALT_OTLP_ENDPOINT") != endpoint:
                    problems.append(f"{where}: BASALT_OTLP_ENDPOINT={env.get('BASALT_OTLP_ENDPOINT')!r}, want {endpoint!r}")
                want = tracing.get("protocol", "http/protobuf")
                if env.get("BASALT_OTLP_PROTOCOL") != want:
                    problems.append(f"{where}: BASALT_OTLP_PROTOCOL={env.get('BASALT_OTLP_PROTOCOL')!r}, want {want!r}")
            elif any(n.startswith("BASALT_OTLP_") for n in env):
                problems.append(f"{where}: OTLP settings without tracing.otlpEndpoint")
    return problems


def check_streaming(r: Rendered) -> list[str]:
    """The engine gets the streaming subscription settings of engine.streamingQueries, written
    as plain integers (a large value must not come out in exponent form), and the change
    detection settings of engine.liveQueries."""
    engine = r.deployment("engine")
    if not engine:
        return ["no engine Deployment"]
    streaming = r.values.get("engine", {}).get("streamingQueries", {})
    env = {e["name"]: e.get("value") for e in container(engine, "engine").get("env", [])}
    problems = []
    for name, key in [
        ("BASALT_STREAMING_QUERIES_MULTIPLEXED_REFETCH_INTERVAL", "refetchIntervalMs"),
        ("BASALT_STREAMING_QUERIES_MULTIPLEXED_BATCH_SIZE", "batchSize"),
    ]:
        want = str(int(streaming.get(key)))
        if env.get(name) != want:
            problems.append(f"{name}={env.get(name)!r}, want {want!r} (engine.streamingQueries.{key})")
    live = r.values.get("engine", {}).get("liveQueries", {})
    for name, want in [
        ("BASALT_LIVE_QUERIES_CHANGE_DETECTION", live.get("changeDetection")),
        ("BASALT_LIVE_QUERIES_FALLBACK_REFETCH_INTERVAL", str(int(live.get("fallbackRefetchInterval")))),
        ("BASALT_LIVE_QUERIES_CHANGE_DETECTION_EXCLUDE", ",".join(live.get("changeDetectionExclude", []))),
    ]:
        if env.get(name) != want:
            problems.append(f"{name}={env.get(name)!r}, want {want!r} (engine.liveQueries)")
    # A separate controller keeps the change triggers in step under the same settings.
    controller = r.deployment("controller")
    if controller:
        controller_env = {e["name"]: e.get("value") for e in container(controller, "controller").get("env", [])}
        for name in ("BASALT_LIVE_QUERIES_CHANGE_DETECTION", "BASALT_LIVE_QUERIES_CHANGE_DETECTION_EXCLUDE"):
            if controller_env.get(name) != env.get(name):
                problems.append(f"controller {name}={controller_env.get(name)!r}, engine has {env.get(name)!r}")
    return problems


def check_probes(r: Rendered) -> list[str]:
    problems = []
    engine = r.deployment("engine")
    if not engine:
        return ["no engine Deployment"]
    c = container(engine, "engine")
    want = {
        "readinessProbe": ("http", "/readyz", ENGINE_PORT),
        "startupProbe": ("http", "/readyz", ENGINE_PORT),
        "livenessProbe": ("tcp", None, ENGINE_PORT),
    }
    for probe, expected in want.items():
        got = probe_target(c, c.get(probe))
        if got != expected:
            problems.append(f"engine {probe} is {got}, expected {expected}")
    env = env_map(c)
    port_env = env.get("BASALT_PORT", {}).get("value")
    if port_env not in (None, str(ENGINE_PORT)):
        problems.append(f"engine BASALT_PORT={port_env!r} but probes use {ENGINE_PORT}")
    for svc in r.of_kind("Service"):
        ports = svc["spec"].get("ports", [])
        if len(ports) != 1:
            problems.append(f"Service {svc['metadata']['name']} has {len(ports)} ports")
            continue
        if ports[0].get("port") != r.values["service"]["port"]:
            problems.append(f"Service port {ports[0].get('port')}, values say {r.values['service']['port']}")
        if resolve_port(c, ports[0].get("targetPort")) != ENGINE_PORT:
            problems.append(f"Service targetPort {ports[0].get('targetPort')!r} is not the engine's {ENGINE_PORT}")
        sel = svc["spec"].get("selector", {})
        labels = engine["spec"]["template"]["metadata"].get("labels", {})
        if not sel or any(labels.get(k) != val for k, val in sel.items()):
            problems.append(f"Service selector {sel} does not select the engine pods")
    ctrl = r.deployment("controller")
    if ctrl:
        cc = container(ctrl, "controller")
        want_c = {
            "readinessProbe": ("http", "/readyz", PROBE_PORT),
            "livenessProbe": ("http", "/healthz", PROBE_PORT),
        }
        for probe, expected in want_c.items():
            got = probe_target(cc, cc.get(probe))
            if got != expected:
                problems.append(f"controller {probe} is {got}, expected {expected}")
        if cc.get("startupProbe"):
            got = probe_target(cc, cc["startupProbe"])
            if got[2] != PROBE_PORT or got[0] != "http" or got[1] not in ("/healthz", "/readyz"):
                problems.append(f"controller startupProbe is {got}")
    for d in r.of_kind("Deployment"):
        for cont in d["spec"]["template"]["spec"]["containers"]:
            pp = env_map(cont).get("BASALT_CONTROLLER_PROBE_PORT", {}).get("value")
            if pp not in (None, str(PROBE_PORT)):
                problems.append(f"{d['metadata']['name']}: BASALT_CONTROLLER_PROBE_PORT={pp!r}")
    return problems


def check_workloads(r: Rendered) -> list[str]:
    v = r.values["controller"]
    problems = []
    engines = r.deployments("engine")
    ctrls = r.deployments("controller")
    if len(engines) != 1:
        return [f"{len(engines)} engine Deployments, expected 1"]
    engine = engines[0]
    if engine["spec"].get("replicas") != r.values["engine"]["replicas"]:
        problems.append(f"engine replicas {engine['spec'].get('replicas')}, values say {r.values['engine']['replicas']}")
    ec = container(engine, "engine")
    if (ec.get("command") or []) + (ec.get("args") or []) != ["serve"]:
        problems.append(f"engine runs {ec.get('command')} {ec.get('args')}, expected args [serve]")
    embedded_env = env_map(ec).get("BASALT_CONTROLLER", {}).get("value")
    should_embed = bool(v["enabled"] and v["embedded"])
    if should_embed and embedded_env != "true":
        problems.append("controller.embedded but the engine lacks BASALT_CONTROLLER=true")
    if not should_embed and embedded_env not in (None, "false"):
        problems.append(f"engine has BASALT_CONTROLLER={embedded_env!r} without controller.embedded")
    want_ctrl = bool(v["enabled"] and not v["embedded"])
    if want_ctrl:
        if len(ctrls) != 1:
            problems.append(f"{len(ctrls)} controller Deployments, expected 1")
        else:
            cc = container(ctrls[0], "controller")
            if (cc.get("command") or []) + (cc.get("args") or []) != ["controller"]:
                problems.append(f"controller runs {cc.get('command')} {cc.get('args')}, expected args [controller]")
            if ctrls[0]["spec"].get("replicas") != v["replicas"]:
                problems.append(f"controller replicas {ctrls[0]['spec'].get('replicas')}, values say {v['replicas']}")
    elif ctrls:
        problems.append("a controller Deployment is rendered although controller.enabled is false or embedded")
    if not want_ctrl and any(
        sa["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "controller"
        for sa in r.of_kind("ServiceAccount")
    ):
        problems.append("a controller ServiceAccount is rendered without a controller Deployment")
    return problems


def check_env_names(r: Rendered, known: set[str]) -> list[str]:
    problems = []
    for d in r.of_kind("Deployment"):
        for c in d["spec"]["template"]["spec"]["containers"]:
            for e in c.get("env", []):
                n = e["name"]
                if n.startswith("BASALT_") and n not in known:
                    problems.append(f"{d['metadata']['name']}/{c['name']}: {n} is not a flag in src/config.rs")
    return problems


def check_security(r: Rendered) -> list[str]:
    problems = []
    for d in r.of_kind("Deployment"):
        pod = d["spec"]["template"]["spec"]
        name = d["metadata"]["name"]
        psc = pod.get("securityContext") or {}
        tmp_volumes = {
            vol["name"] for vol in pod.get("volumes", []) if "emptyDir" in vol
        }
        for c in pod["containers"]:
            sc = c.get("securityContext") or {}
            if not (sc.get("runAsNonRoot") or psc.get("runAsNonRoot")):
                problems.append(f"{name}/{c['name']}: runAsNonRoot is not set")
            if sc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{name}/{c['name']}: readOnlyRootFilesystem is not true")
            if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
                problems.append(f"{name}/{c['name']}: capabilities do not drop ALL")
            if sc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{name}/{c['name']}: allowPrivilegeEscalation is not false")
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            if mounts.get("/tmp") not in tmp_volumes:
                problems.append(f"{name}/{c['name']}: /tmp is not an emptyDir")
    return problems


# ---------------------------------------------------------------------------------------------
# The values matrix

BASE = {"database": {"url": DATABASE_URL}}
MATRIX: dict[str, dict[str, Any]] = {
    # The chart's defaults plus the one required value.
    "defaults": BASE,
    "existing-secrets": {
        "database": {"existingSecret": "basalt-db"},
        "adminSecret": {"existingSecret": "basalt-admin"},
    },
    "embedded": merge(BASE, {"controller": {"embedded": True}}),
    "controller-disabled": merge(BASE, {"controller": {"enabled": False}}),
    "controller-disabled-embedded": merge(BASE, {"controller": {"enabled": False, "embedded": True}}),
    "engine-replicas-2": merge(BASE, {"engine": {"replicas": 2}}),
    "watch-all-namespaces": merge(BASE, {"controller": {"watchAllNamespaces": True}}),
    "watch-namespaces-a-b": merge(BASE, {"controller": {"watchNamespaces": ["a", "b"]}}),
    "embedded-watch-all": merge(BASE, {"controller": {"embedded": True, "watchAllNamespaces": True}}),
    "all-secrets-inline": merge(
        BASE,
        {
            "adminSecret": {"value": "admin-not-a-secret"},
            "auth": {
                "jwtSecret": '{"type":"HS256","key":"0123456789abcdef0123456789abcdef"}',
                "authHook": "",
                "unauthorizedRole": "anonymous",
            },
            "controller": {"databaseUrl": "postgres://basalt@db-direct:5432/app", "labelSelector": "basalt.dev/engine=prod"},
        },
    ),
    "existing-secrets-direct-url": {
        "database": {"existingSecret": "basalt-db", "urlKey": "url"},
        "adminSecret": {"existingSecret": "basalt-admin", "key": "token"},
        "auth": {"existingSecret": "basalt-jwt", "jwtSecretKey": "jwt"},
        "controller": {"databaseUrlKey": "directUrl", "selfHeal": True},
    },
    "metrics-enabled": merge(BASE, {"metrics": {"enabled": True}}),
    "pod-monitor": merge(BASE, {"metrics": {"enabled": True, "podMonitor": {
        "enabled": True, "interval": "15s", "scrapeTimeout": "10s", "labels": {"release": "prometheus"}}}}),
    "pod-monitor-embedded": merge(BASE, {
        "metrics": {"enabled": True, "podMonitor": {"enabled": True}},
        "controller": {"embedded": True},
    }),
    "tracing-enabled": merge(BASE, {
        "tracing": {"otlpEndpoint": "http://otel-collector.observability:4318", "protocol": "http/json"},
        "controller": {"enabled": True, "embedded": False},
    }),
    "streaming-tuned": merge(BASE, {"engine": {"streamingQueries": {"refetchIntervalMs": 250, "batchSize": 2000000}}}),
    "change-detection-tuned": merge(BASE, {"engine": {"liveQueries": {
        "changeDetection": "off", "fallbackRefetchInterval": 3600000,
        "changeDetectionExclude": ["public.clicks", "audit.log"]}},
        "controller": {"enabled": True, "embedded": False}}),
    "mixed-secrets": {
        "database": {"existingSecret": "basalt-db"},
        "adminSecret": {"value": "inline-admin"},
        "auth": {"authHook": "http://auth.example/hook", "authHookMode": "POST"},
        "engine": {"env": [{"name": "BASALT_DEV_MODE", "value": "false"}]},
    },
}


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    chart_plurals = crd_plurals(CHART_CRDS)
    repo_plurals = crd_plurals(CRDS)

    # -- static checks -------------------------------------------------------------------
    def crds_identical() -> list[str]:
        problems = []
        repo = {p.name: p for p in CRDS.glob("*.yaml")}
        chart = {p.name: p for p in CHART_CRDS.glob("*.yaml")}
        if not repo:
            problems.append("crds/ holds no YAML files")
        if set(repo) != set(chart):
            problems.append(
                f"file sets differ: only in crds/ {sorted(set(repo) - set(chart))}, "
                f"only in charts/basalt/crds/ {sorted(set(chart) - set(repo))}"
            )
        for name in sorted(set(repo) & set(chart)):
            if repo[name].read_bytes() != chart[name].read_bytes():
                problems.append(f"{name} differs (cp crds/*.yaml charts/basalt/crds/)")
        others = [p.name for p in CHART_CRDS.iterdir() if p.suffix != ".yaml"]
        if others:
            problems.append(f"other files in charts/basalt/crds/: {others}")
        return problems

    run("crds-identical", crds_identical)
    run(
        "crd-plurals",
        lambda: None
        if chart_plurals and chart_plurals == repo_plurals
        else f"chart {chart_plurals} vs repository {repo_plurals}",
    )

    def chart_metadata() -> list[str]:
        with helm.Chart.load(CHART) as chart:
            md = chart.metadata
            problems = []
            for key, want in {"apiVersion": "v2", "name": "basalt", "version": "0.1.0", "appVersion": "0.1.0"}.items():
                if md.get(key) != want:
                    problems.append(f"Chart.yaml {key}={md.get(key)!r}, expected {want!r}")
            if chart.schema is None:
                problems.append("no values.schema.json")
            helm_crds = sorted(c["filename"].split("/")[-1] for c in chart.crds)
            want_crds = sorted(p.name for p in CHART_CRDS.glob("*.yaml"))
            if helm_crds != want_crds:
                problems.append(f"Helm sees CRDs {helm_crds}, expected {want_crds}")
            return problems

    run("chart-metadata", chart_metadata)

    def lint(values: dict[str, Any] | None) -> Callable[[], list[str]]:
        def go() -> list[str]:
            result = helm.lint(CHART, values, strict=True, namespace=NAMESPACE, kube_version=f"v{K8S_VERSION}")
            problems = list(result.get("errors") or [])
            for m in result.get("messages") or []:
                if m.get("severity", 0) >= 2:
                    problems.append(f"{m.get('path')}: {m.get('error')}")
            return problems

        return go

    run("lint[chart-defaults]", lint(None))
    for case in ("defaults", "embedded", "watch-namespaces-a-b", "existing-secrets-direct-url"):
        run(f"lint[{case}]", lint(MATRIX[case]))

    try:
        known_env = config_env_names()
    except OSError as err:
        known_env = set()
        report("config-env-names", f"cannot read {CONFIG_RS}: {err}")
    else:
        report("config-env-names", None if known_env else f"no env = \"BASALT_…\" found in {CONFIG_RS}")

    with helm.Chart.load(CHART) as chart:
        chart_values = chart.values

        def refused(values: dict[str, Any], needle: str) -> Callable[[], str | None]:
            def go() -> str | None:
                try:
                    chart.render(values, name=RELEASE, namespace=NAMESPACE)
                except helm.HelmError as err:
                    if needle not in str(err):
                        return f"refused, but the message lacks {needle!r}: {err}"
                    return None
                return "rendered, expected a refusal"

            return go

        run("refuses[no-database]", refused({}, "database.url"))
        run("refuses[bad-managed-metadata]", refused(merge(BASE, {"controller": {"managedMetadata": "maybe"}}), "managedMetadata"))
        run("refuses[unknown-key]", refused(merge(BASE, {"controller": {"resyncInterval": "5m"}}), "resyncInterval"))
        run(
            "refuses[pod-monitor-without-public-metrics]",
            refused(merge(BASE, {"metrics": {"podMonitor": {"enabled": True}}}), "metrics.enabled"),
        )
        run(
            "refuses[pod-monitor-bad-interval]",
            refused(merge(BASE, {"metrics": {"enabled": True, "podMonitor": {"enabled": True, "interval": "often"}}}), "interval"),
        )
        run(
            "refuses[change-detection-maybe]",
            refused(merge(BASE, {"engine": {"liveQueries": {"changeDetection": "maybe"}}}), "changeDetection"),
        )
        run(
            "refuses[change-detection-exclude-unqualified]",
            refused(merge(BASE, {"engine": {"liveQueries": {"changeDetectionExclude": ["clicks"]}}}), "changeDetectionExclude"),
        )
        run(
            "refuses[streaming-batch-size-0]",
            refused(merge(BASE, {"engine": {"streamingQueries": {"batchSize": 0}}}), "batchSize"),
        )
        run(
            "refuses[watch-all-and-list]",
            refused(merge(BASE, {"controller": {"watchAllNamespaces": True, "watchNamespaces": ["a"]}}), "watchNamespaces"),
        )

        # -- the matrix --------------------------------------------------------------------
        for case, values in MATRIX.items():
            try:
                manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE)
                r = Rendered(values, chart_values, manifests)
            except Exception as err:  # noqa: BLE001
                report(f"render[{case}]", f"{type(err).__name__}: {err}")
                continue
            report(f"render[{case}]", None if r.objects else "no objects rendered")
            run(f"validate[{case}]", lambda: check_validate(r))
            run(f"workloads[{case}]", lambda: check_workloads(r))
            run(f"rbac[{case}]", lambda: check_rbac(r, chart_plurals))
            run(f"watch-env[{case}]", lambda: check_watch_env(r))
            run(f"service-accounts[{case}]", lambda: check_service_accounts(r))
            run(f"secrets[{case}]", lambda: check_secrets(r))
            run(f"probes[{case}]", lambda: check_probes(r))
            run(f"metrics[{case}]", lambda: check_metrics(r))
            run(f"pod-monitor[{case}]", lambda: check_pod_monitor(r))
            run(f"tracing[{case}]", lambda: check_tracing(r))
            run(f"streaming[{case}]", lambda: check_streaming(r))
            run(f"env-names[{case}]", lambda: check_env_names(r, known_env))
            run(f"security[{case}]", lambda: check_security(r))

    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
