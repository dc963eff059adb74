/** A crash mid-change: kill -9 of the agent alone in the middle of each kind of change (test/support/crash-suite.ts). */
import { describeKills } from "../support/crash-suite";

describeKills("agent");
