"""The security kinds and reviews through the official Python client's typed models.

Run with Debian's /usr/bin/python3 (python3-kubernetes):
    official_clients_rbac.py ADMIN_KUBECONFIG VIEWER_KUBECONFIG NAMESPACE
ADMIN may do anything; VIEWER holds the view ClusterRole in NAMESPACE through
a RoleBinding. Every call deserializes into the client's models (V1Role,
V1ClusterRole, V1TokenRequest, ...), which refuse a missing required field
(a rule's verbs, a binding's roleRef). Prints one JSON line of facts read;
exits 1 on the first error, naming the call.
"""
import json
import sys
import threading
import time
import traceback

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

GROUP = "rbac.authorization.k8s.io"


def main() -> int:
    admin_kc, viewer_kc, ns = sys.argv[1:4]
    admin = config.new_client_from_config(config_file=admin_kc)
    viewer = config.new_client_from_config(config_file=viewer_kc)
    rbac = client.RbacAuthorizationV1Api(admin)
    core = client.CoreV1Api(admin)
    authn = client.AuthenticationV1Api(admin)
    authz = client.AuthorizationV1Api(admin)
    facts = {}

    def step(name, fn):
        try:
            return fn()
        except Exception:  # report which call and why, then fail
            sys.stderr.write(f"{name} failed:\n{traceback.format_exc()}\n")
            raise SystemExit(1)

    # A watch of roles in the namespace: ADDED, MODIFIED, DELETED. It is under way once it has
    # reported the anchor role made before it (the first events are what exists).
    rule = client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list"])
    step("create_namespaced_role (anchor)", lambda: rbac.create_namespaced_role(ns, client.V1Role(metadata=client.V1ObjectMeta(name="py-anchor"), rules=[rule])))
    seen = []
    anchored = threading.Event()
    w = watch.Watch()

    def watch_roles():
        try:
            for ev in w.stream(rbac.list_namespaced_role, ns, timeout_seconds=120):
                seen.append((ev["type"], type(ev["object"]).__name__, ev["object"].metadata.name, len(ev["object"].rules or [])))
                if ev["object"].metadata.name == "py-anchor":
                    anchored.set()
                if ev["type"] == "DELETED" and ev["object"].metadata.name == "py-role":
                    w.stop()
        except Exception:
            seen.append(("ERROR", traceback.format_exc(), "", 0))
        anchored.set()

    watcher = threading.Thread(target=watch_roles, daemon=True)
    watcher.start()
    if not anchored.wait(120):
        sys.stderr.write("the watch of roles reported nothing\n")
        return 1

    # Role: create, read, list, patch, delete.
    role = client.V1Role(metadata=client.V1ObjectMeta(name="py-role"), rules=[rule])
    made = step("create_namespaced_role", lambda: rbac.create_namespaced_role(ns, role))
    facts["role.created.kind"] = type(made).__name__
    r = step("read_namespaced_role", lambda: rbac.read_namespaced_role("py-role", ns))
    facts["role.rules"] = [x.to_dict() for x in r.rules]
    facts["role.list"] = [x.metadata.name for x in step("list_namespaced_role", lambda: rbac.list_namespaced_role(ns)).items]
    patched = step(
        "patch_namespaced_role",
        lambda: rbac.patch_namespaced_role("py-role", ns, {"rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get"]}]}),
    )
    facts["role.patched.resources"] = patched.rules[0].resources
    step("list_role_for_all_namespaces", lambda: rbac.list_role_for_all_namespaces())

    # ClusterRole with an aggregationRule, and one it aggregates.
    agg = client.V1ClusterRole(
        metadata=client.V1ObjectMeta(name="py-aggregate"),
        aggregation_rule=client.V1AggregationRule(
            cluster_role_selectors=[client.V1LabelSelector(match_labels={"py.example.com/aggregate": "true"})]
        ),
    )
    made = step("create_cluster_role (aggregated)", lambda: rbac.create_cluster_role(agg))
    facts["clusterrole.selector"] = made.aggregation_rule.cluster_role_selectors[0].match_labels
    part = client.V1ClusterRole(
        metadata=client.V1ObjectMeta(name="py-part", labels={"py.example.com/aggregate": "true"}),
        rules=[client.V1PolicyRule(non_resource_ur_ls=["/healthz"], verbs=["get"])],
    )
    step("create_cluster_role", lambda: rbac.create_cluster_role(part))
    cr = step("read_cluster_role", lambda: rbac.read_cluster_role("py-part"))
    facts["clusterrole.nonResourceURLs"] = cr.rules[0].non_resource_ur_ls
    step("list_cluster_role", lambda: rbac.list_cluster_role(label_selector="py.example.com/aggregate=true"))
    cr = step("patch_cluster_role", lambda: rbac.patch_cluster_role("py-part", {"metadata": {"labels": {"patched": "yes"}}}))
    facts["clusterrole.patched.labels"] = cr.metadata.labels

    # RoleBinding and ClusterRoleBinding: roleRef and subjects of every kind.
    rb = client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="py-binding"),
        role_ref=client.V1RoleRef(api_group=GROUP, kind="Role", name="py-role"),
        subjects=[
            client.V1Subject(kind="User", name="py-user", api_group=GROUP),
            client.V1Subject(kind="ServiceAccount", name="py-sa", namespace=ns),
        ],
    )
    step("create_namespaced_role_binding", lambda: rbac.create_namespaced_role_binding(ns, rb))
    b = step("read_namespaced_role_binding", lambda: rbac.read_namespaced_role_binding("py-binding", ns))
    facts["rolebinding.roleRef"] = b.role_ref.to_dict()
    facts["rolebinding.subjects"] = [s.to_dict() for s in b.subjects]
    step("list_namespaced_role_binding", lambda: rbac.list_namespaced_role_binding(ns))
    crb = client.V1ClusterRoleBinding(
        metadata=client.V1ObjectMeta(name="py-cluster-binding"),
        role_ref=client.V1RoleRef(api_group=GROUP, kind="ClusterRole", name="py-aggregate"),
        subjects=[client.V1Subject(kind="ServiceAccount", name="py-sa", namespace=ns)],
    )
    step("create_cluster_role_binding", lambda: rbac.create_cluster_role_binding(crb))
    b = step("read_cluster_role_binding", lambda: rbac.read_cluster_role_binding("py-cluster-binding"))
    facts["clusterrolebinding.roleRef.kind"] = b.role_ref.kind
    step("list_cluster_role_binding", lambda: rbac.list_cluster_role_binding())
    step(
        "patch_cluster_role_binding",
        lambda: rbac.patch_cluster_role_binding("py-cluster-binding", {"metadata": {"annotations": {"a": "b"}}}),
    )
    # Changing roleRef is refused: 422 naming the field.
    try:
        rbac.patch_namespaced_role_binding("py-binding", ns, {"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}})
        facts["rolebinding.roleRef.change"] = "accepted"
    except ApiException as e:
        facts["rolebinding.roleRef.change"] = e.status
        facts["rolebinding.roleRef.change.reason"] = json.loads(e.body).get("reason")

    # ServiceAccount: create, read, list, patch; a TokenRequest; the token reviewed.
    step(
        "create_namespaced_service_account",
        lambda: core.create_namespaced_service_account(ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="py-sa"))),
    )
    sa = step("read_namespaced_service_account", lambda: core.read_namespaced_service_account("py-sa", ns))
    facts["sa.uid"] = sa.metadata.uid
    step("list_namespaced_service_account", lambda: core.list_namespaced_service_account(ns))
    sa = step(
        "patch_namespaced_service_account",
        lambda: core.patch_namespaced_service_account("py-sa", ns, {"automountServiceAccountToken": False}),
    )
    facts["sa.automount"] = sa.automount_service_account_token
    tr = step(
        "create_namespaced_service_account_token",
        lambda: core.create_namespaced_service_account_token(
            "py-sa", ns, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600))
        ),
    )
    facts["token.kind"] = type(tr).__name__
    facts["token.expirationTimestamp"] = tr.status.expiration_timestamp.isoformat()
    facts["token.expirationSeconds"] = tr.spec.expiration_seconds
    review = step(
        "create_token_review",
        lambda: authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=tr.status.token))),
    )
    facts["tokenreview.authenticated"] = review.status.authenticated
    facts["tokenreview.username"] = review.status.user.username
    facts["tokenreview.groups"] = review.status.user.groups
    bad = step(
        "create_token_review (bad token)",
        lambda: authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="not-a-token"))),
    )
    facts["tokenreview.bad.authenticated"] = bool(bad.status.authenticated)

    # Access reviews.
    ssar = step(
        "create_self_subject_access_review",
        lambda: authz.create_self_subject_access_review(
            client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(
                    resource_attributes=client.V1ResourceAttributes(namespace=ns, verb="create", group=GROUP, resource="roles")
                )
            )
        ),
    )
    facts["ssar.allowed"] = ssar.status.allowed
    facts["ssar.reason"] = ssar.status.reason
    ssrr = step(
        "create_self_subject_rules_review",
        lambda: authz.create_self_subject_rules_review(client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=ns))),
    )
    facts["ssrr.incomplete"] = ssrr.status.incomplete
    facts["ssrr.star"] = any(r.verbs == ["*"] and r.resources == ["*"] for r in ssrr.status.resource_rules)
    def sar(user, groups, verb):
        return step(
            "create_subject_access_review %s %s" % (user, verb),
            lambda: authz.create_subject_access_review(
                client.V1SubjectAccessReview(
                    spec=client.V1SubjectAccessReviewSpec(
                        user=user, groups=groups, resource_attributes=client.V1ResourceAttributes(namespace=ns, verb=verb, resource="pods")
                    )
                )
            ),
        ).status

    def eventually(want, fn, seconds=60):
        # The authorizer reads bindings from a watch (as Kubernetes' informers): a review just after a write may see the one before.
        deadline = time.monotonic() + seconds
        while True:
            got = fn()
            if got == want or time.monotonic() > deadline:
                return got
            time.sleep(0.2)

    facts["sar.py-user.get.eventually"] = eventually(True, lambda: sar("py-user", [], "get").allowed)
    st = sar("py-user", [], "get")
    facts["sar.py-user.get"] = st.allowed
    facts["sar.py-user.get.reason"] = st.reason
    facts["sar.py-user.delete"] = sar("py-user", [], "delete").allowed
    facts["sar.py-group.get"] = sar("someone", ["py-group"], "get").allowed
    lsar = step(
        "create_namespaced_local_subject_access_review",
        lambda: authz.create_namespaced_local_subject_access_review(
            ns,
            client.V1LocalSubjectAccessReview(
                spec=client.V1SubjectAccessReviewSpec(
                    user="system:serviceaccount:%s:py-sa" % ns,
                    resource_attributes=client.V1ResourceAttributes(namespace=ns, verb="get", resource="pods", name="x"),
                )
            ),
        ),
    )
    facts["lsar.py-sa.get-pod"] = lsar.status.allowed
    # The binding's subjects patched to a group: the group may, the user no longer.
    b = step(
        "patch_namespaced_role_binding",
        lambda: rbac.patch_namespaced_role_binding("py-binding", ns, {"subjects": [{"kind": "Group", "name": "py-group", "apiGroup": GROUP}]}),
    )
    facts["rolebinding.patched.subjects"] = [s.to_dict() for s in b.subjects]
    facts["sar.after.py-group.get"] = eventually(True, lambda: sar("someone", ["py-group"], "get").allowed)
    facts["sar.after.py-user.get"] = eventually(False, lambda: sar("py-user", [], "get").allowed)

    # The viewer: reads, and a create is ApiException 403 with Kubernetes' Status body.
    vrbac = client.RbacAuthorizationV1Api(viewer)
    vcore = client.CoreV1Api(viewer)
    step("viewer list_namespaced_service_account", lambda: vcore.list_namespaced_service_account(ns))
    try:
        vrbac.create_namespaced_role(ns, client.V1Role(metadata=client.V1ObjectMeta(name="viewer-role"), rules=[rule]))
        facts["viewer.create"] = "accepted"
    except ApiException as e:
        facts["viewer.create"] = e.status
        facts["viewer.create.body"] = json.loads(e.body)
    try:
        vcore.create_namespaced_service_account_token("py-sa", ns, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])))
        facts["viewer.token"] = "accepted"
    except ApiException as e:
        facts["viewer.token"] = e.status
    vssar = step(
        "viewer create_self_subject_access_review",
        lambda: client.AuthorizationV1Api(viewer).create_self_subject_access_review(
            client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(namespace=ns, verb="create", resource="pods"))
            )
        ),
    )
    facts["viewer.ssar.allowed"] = vssar.status.allowed
    facts["viewer.ssar.denied"] = bool(vssar.status.denied)

    # Deletes: the bindings, the roles, the account; the watch sees the role go.
    step("delete_namespaced_role_binding", lambda: rbac.delete_namespaced_role_binding("py-binding", ns))
    step("delete_cluster_role_binding", lambda: rbac.delete_cluster_role_binding("py-cluster-binding"))
    step("delete_cluster_role", lambda: rbac.delete_cluster_role("py-part"))
    step("delete_cluster_role (aggregated)", lambda: rbac.delete_cluster_role("py-aggregate"))
    step("delete_namespaced_role", lambda: rbac.delete_namespaced_role("py-role", ns))
    step("delete_namespaced_role (anchor)", lambda: rbac.delete_namespaced_role("py-anchor", ns))
    step("delete_namespaced_service_account", lambda: core.delete_namespaced_service_account("py-sa", ns))
    try:
        rbac.read_namespaced_role("py-role", ns)
        facts["role.afterDelete"] = 200
    except ApiException as e:
        facts["role.afterDelete"] = e.status
    watcher.join(60)
    facts["watch"] = [list(x) for x in seen if x[2] == "py-role" or x[0] == "ERROR"]
    print(json.dumps(facts, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
