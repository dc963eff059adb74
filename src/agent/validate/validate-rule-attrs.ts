/**
 * A rule's attribute list (validate-state.ts calls this): the table's
 * checks (validate-attrs.ts), then what only makes sense together. An
 * attribute that is the rule's action (goto, nop, l3mdev) takes the place
 * of action and table: the rule's action must be left at LOOKUP and its
 * table at 0, and it is alone.
 */
import type { Rule as WireRule } from "../../gen/network_pb";
import type { Family } from "../../net/model/address";
import type { Rule } from "../../net/plan/rules";
import type { Attr } from "../../net/vocabulary/attrs";
import { RULE_ACTION_ATTRS, RULE_ATTRS } from "../../net/vocabulary/rule-attrs";
import { attrsFromWire } from "./validate-attrs";
import { invalid } from "./validate-fields";

export function ruleAttrs(
  f: string,
  r: WireRule,
  action: Rule["action"],
  family: Family,
): Attr[] | undefined {
  const attrs = attrsFromWire(f, r.attrs, RULE_ATTRS, family);
  const acts = (attrs ?? []).filter(([n]) => RULE_ACTION_ATTRS.includes(n));
  if (acts.length > 1)
    throw invalid(`${f}.attrs`, acts.map(([n]) => n).join(","), "are two actions: a rule has one");
  const act = acts[0];
  if (act !== undefined) {
    if (action !== "lookup")
      throw invalid(`${f}.action`, r.action, `is given with the action attribute ${act[0]}`);
    if (r.table !== 0)
      throw invalid(`${f}.table`, r.table, `is given with the action attribute ${act[0]}`);
  }
  return attrs;
}
