/**
 * IpRunner's narrow reads (readLinks, readLinksAndRoutes,
 * readLinksAndNeighbors) over a test fake's readState, so a fake models one
 * state and answers every read the services make.
 */
import type { NetState } from "../../src/net/model/model";

export function narrowReads(readState: () => Promise<NetState>) {
  return {
    readLinks: async () => ({ links: (await readState()).links }),
    readLinksAndRoutes: async () => {
      const { links, routes } = await readState();
      return { links, routes };
    },
    readLinksAndNeighbors: async () => {
      const { links, neighbors } = await readState();
      return { links, neighbors };
    },
  };
}
