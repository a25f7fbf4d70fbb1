"""Reads every served kind through the official Python client's typed models.

Run with Debian's /usr/bin/python3 (python3-kubernetes):
    official_clients.py KUBECONFIG NAMESPACE NODE
Each call deserializes into the client's models (V1Pod, V1Scale, ...), which
refuse a missing required field ("Invalid value for `restart_count`, must not
be `None`"). Prints one JSON line of facts read; exits 1 on the first error.
"""
import base64
import json
import sys
import traceback

from kubernetes import client, config, watch


def main() -> int:
    kubeconfig, ns, node = sys.argv[1:4]
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    apps = client.AppsV1Api()
    batch = client.BatchV1Api()
    coord = client.CoordinationV1Api()
    facts = {}

    def step(name, fn):
        try:
            return fn()
        except Exception:  # report which call and why, then fail
            sys.stderr.write(f"{name} failed:\n{traceback.format_exc()}\n")
            raise SystemExit(1)

    # Namespace
    step("read_namespace", lambda: core.read_namespace(ns))
    step("list_namespace", lambda: core.list_namespace())
    # Node (written by the node agent)
    n = step("read_node", lambda: core.read_node(node))
    facts["node.bootID"] = n.status.node_info.boot_id
    facts["node.kubeletPort"] = n.status.daemon_endpoints.kubelet_endpoint.port
    step("list_node", lambda: core.list_node())
    step("read_node_status", lambda: core.read_node_status(node))
    # Pod: get, list, status, one watch event
    p = step("read_namespaced_pod", lambda: core.read_namespaced_pod("web", ns))
    facts["pod.restartCount"] = p.status.container_statuses[0].restart_count
    step("list_namespaced_pod", lambda: core.list_namespaced_pod(ns))
    step("list_pod_for_all_namespaces", lambda: core.list_pod_for_all_namespaces())
    step("read_namespaced_pod_status", lambda: core.read_namespaced_pod_status("web", ns))
    w = watch.Watch()
    ev = step("watch pods", lambda: next(iter(w.stream(core.list_namespaced_pod, ns, timeout_seconds=10))))
    w.stop()
    facts["watch.type"] = ev["type"]
    facts["watch.kind"] = type(ev["object"]).__name__
    # Service, Endpoints
    s = step("read_namespaced_service", lambda: core.read_namespaced_service("web", ns))
    facts["service.loadBalancer"] = s.status.load_balancer.to_dict()
    step("list_namespaced_service", lambda: core.list_namespaced_service(ns))
    step("read_namespaced_service_status", lambda: core.read_namespaced_service_status("web", ns))
    step("read_namespaced_endpoints", lambda: core.read_namespaced_endpoints("web", ns))
    step("list_namespaced_endpoints", lambda: core.list_namespaced_endpoints(ns))
    # ReplicationController: get, list, status, scale (read and write)
    rc = step("read_namespaced_replication_controller", lambda: core.read_namespaced_replication_controller("rc", ns))
    facts["rc.status.replicas"] = rc.status.replicas
    step("list_namespaced_replication_controller", lambda: core.list_namespaced_replication_controller(ns))
    step("read_namespaced_replication_controller_status", lambda: core.read_namespaced_replication_controller_status("rc", ns))
    sc = step("read_namespaced_replication_controller_scale", lambda: core.read_namespaced_replication_controller_scale("rc", ns))
    facts["scale.status.replicas"] = sc.status.replicas
    sc2 = step(
        "patch_namespaced_replication_controller_scale",
        lambda: core.patch_namespaced_replication_controller_scale("rc", ns, {"spec": {"replicas": 3}}),
    )
    facts["scale.spec.replicas"] = sc2.spec.replicas
    # Event, ConfigMap
    e = step("read_namespaced_event", lambda: core.read_namespaced_event("ev", ns))
    facts["event.reportingComponent"] = e.reporting_component
    step("list_namespaced_event", lambda: core.list_namespaced_event(ns))
    step("read_namespaced_config_map", lambda: core.read_namespaced_config_map("cfg", ns))
    step("list_namespaced_config_map", lambda: core.list_namespaced_config_map(ns))
    # Secret: the data as base64, stringData never returned
    sec = step("read_namespaced_secret", lambda: core.read_namespaced_secret("sec", ns))
    facts["secret.password"] = base64.b64decode(sec.data["password"]).decode()
    facts["secret.type"] = sec.type
    step("list_namespaced_secret", lambda: core.list_namespaced_secret(ns))
    # DaemonSet, Job, Lease
    ds = step("read_namespaced_daemon_set", lambda: apps.read_namespaced_daemon_set("ds", ns))
    facts["ds.numberReady"] = ds.status.number_ready
    step("list_namespaced_daemon_set", lambda: apps.list_namespaced_daemon_set(ns))
    step("read_namespaced_daemon_set_status", lambda: apps.read_namespaced_daemon_set_status("ds", ns))
    # ReplicaSet, Deployment: get, list, status, scale
    rs = step("read_namespaced_replica_set", lambda: apps.read_namespaced_replica_set("rs", ns))
    facts["rs.status.replicas"] = rs.status.replicas
    step("list_namespaced_replica_set", lambda: apps.list_namespaced_replica_set(ns))
    step("read_namespaced_replica_set_status", lambda: apps.read_namespaced_replica_set_status("rs", ns))
    step("read_namespaced_replica_set_scale", lambda: apps.read_namespaced_replica_set_scale("rs", ns))
    d = step("read_namespaced_deployment", lambda: apps.read_namespaced_deployment("deploy", ns))
    facts["deploy.maxSurge"] = d.spec.strategy.rolling_update.max_surge
    step("list_namespaced_deployment", lambda: apps.list_namespaced_deployment(ns))
    step("read_namespaced_deployment_status", lambda: apps.read_namespaced_deployment_status("deploy", ns))
    dsc = step("read_namespaced_deployment_scale", lambda: apps.read_namespaced_deployment_scale("deploy", ns))
    facts["deploy.scale.selector"] = dsc.status.selector
    j = step("read_namespaced_job", lambda: batch.read_namespaced_job("job", ns))
    facts["job.status"] = j.status is not None
    step("list_namespaced_job", lambda: batch.list_namespaced_job(ns))
    step("read_namespaced_job_status", lambda: batch.read_namespaced_job_status("job", ns))
    cj = step("read_namespaced_cron_job", lambda: batch.read_namespaced_cron_job("cj", ns))
    facts["cj.concurrencyPolicy"] = cj.spec.concurrency_policy
    facts["cj.successfulJobsHistoryLimit"] = cj.spec.successful_jobs_history_limit
    step("list_namespaced_cron_job", lambda: batch.list_namespaced_cron_job(ns))
    step("read_namespaced_cron_job_status", lambda: batch.read_namespaced_cron_job_status("cj", ns))
    policy = client.PolicyV1Api()
    pdb = step("read_namespaced_pod_disruption_budget", lambda: policy.read_namespaced_pod_disruption_budget("pdb", ns))
    facts["pdb.minAvailable"] = pdb.spec.min_available
    pdbs = step("read_namespaced_pod_disruption_budget_status", lambda: policy.read_namespaced_pod_disruption_budget_status("pdb", ns))
    facts["pdb.disruptionsAllowed"] = pdbs.status.disruptions_allowed
    step("list_namespaced_pod_disruption_budget", lambda: policy.list_namespaced_pod_disruption_budget(ns))
    # This client (Kubernetes 1.22) has no autoscaling/v2 API; its autoscaling/v1 read is what it can do.
    hpa = step("read_namespaced_horizontal_pod_autoscaler", lambda: client.AutoscalingV1Api().read_namespaced_horizontal_pod_autoscaler("hpa", ns))
    facts["hpa.v1.maxReplicas"] = hpa.spec.max_replicas
    facts["hpa.v1.target"] = hpa.spec.target_cpu_utilization_percentage
    step("read_namespaced_lease", lambda: coord.read_namespaced_lease("lease", ns))
    step("list_namespaced_lease", lambda: coord.list_namespaced_lease(ns))
    print(json.dumps(facts, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
