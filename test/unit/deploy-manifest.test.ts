/**
 * deploy/netagent-follow.yaml checked against Kubernetes' own API schema,
 * as the kubernetes-models package carries it (validators generated from
 * Kubernetes' OpenAPI definitions: types, enums, required fields). There is
 * no cluster here: this is a schema check, not a deployment. Unknown fields
 * are not refused by that schema (the API server's strict field validation
 * would); the test names the fields follow relies on instead.
 */
import { readFileSync } from "node:fs";
import { DaemonSet } from "kubernetes-models/apps/v1/DaemonSet";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

const MANIFEST = new URL("../../deploy/netagent-follow.yaml", import.meta.url);

function documents(): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(MANIFEST, "utf8")).map((d) => {
    if (d.errors.length > 0) throw new Error(d.errors.map((e) => e.message).join("; "));
    return d.toJS() as Record<string, unknown>;
  });
}

describe("deploy/netagent-follow.yaml", () => {
  const docs = documents();
  const ds = docs.find((d) => d.kind === "DaemonSet") as Record<string, unknown>;

  it("every document is valid by the Kubernetes API schema", () => {
    expect(docs.map((d) => d.kind)).toEqual(["Namespace", "DaemonSet"]);
    expect(() => new Namespace(docs[0] as never).validate()).not.toThrow();
    expect(() => new DaemonSet(ds as never).validate()).not.toThrow();
  });

  it("the schema check can fail: a port given as text is refused", () => {
    const bad = structuredClone(ds) as {
      spec: { template: { spec: { containers: { ports: { containerPort: unknown }[] }[] } } };
    };
    const container = bad.spec.template.spec.containers[0];
    if (container?.ports[0]) container.ports[0].containerPort = "9464";
    expect(() => new DaemonSet(bad as never).validate()).toThrow(/containerPort must be integer/);
  });

  it("carries what follow needs: host network and PIDs, the Kata roots and netns with HostToContainer, probes on 127.0.0.1", () => {
    const spec = new DaemonSet(ds as never).spec?.template.spec;
    expect(spec?.hostNetwork).toBe(true);
    expect(spec?.hostPID).toBe(true);
    const c = spec?.containers[0];
    expect(c?.command).toEqual(
      expect.arrayContaining(["follow", "--status-addr", "127.0.0.1:9464"]),
    );
    const mounts = new Map((c?.volumeMounts ?? []).map((m) => [m.mountPath, m.mountPropagation]));
    for (const path of ["/run/vc", "/run/kata", "/run/netns"])
      expect(mounts.get(path)).toBe("HostToContainer");
    for (const probe of [c?.livenessProbe, c?.readinessProbe]) {
      expect(probe?.httpGet).toMatchObject({ host: "127.0.0.1", path: "/healthz", port: 9464 });
    }
    expect(c?.resources?.requests?.memory).toBeDefined();
  });
});
