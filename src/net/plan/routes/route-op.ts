/**
 * One operation of a route plan (planRoutes' output, the restore planner's
 * input). A file of its own so that the planner's helpers
 * (route-deletes.ts) can name it without importing the planner back.
 */
import type { Route } from "../../model/model";

/** `overwrites`: the current route the kernel will overwrite (same key), if any. */
export type RouteOp =
  | { op: "replace"; route: Route; overwrites?: Route }
  | { op: "append"; route: Route }
  | { op: "delete"; route: Route; reason: "superseded" | "stale" };
