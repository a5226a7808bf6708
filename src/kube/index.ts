// Public API of kube/ (re-exports only).
export { createKubeClient, createKubeClientFrom, KubeApiError, type KubeClient, type RequestOptions } from "./client.ts";
export { resolveKubeConfig, type ResolvedKubeConfig } from "./kubeconfig.ts";
export { createKubeSource, collectionPath, type KubeSource, type SourceHooks, type WatchTimings } from "./watch.ts";
export { createLeaderElector, electionNamespace, type LeaderElector, type LeaderTimings } from "./leader.ts";
export { createStatusWriter, parseStatusAddresses, serviceAddresses, type StatusWriter } from "./status.ts";
export { createEventRecorder, type EventRecorder } from "./events.ts";
export { startKubeCluster, type KubeCluster, type KubeClusterOptions } from "./cluster.ts";
