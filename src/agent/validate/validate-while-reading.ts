/**
 * A large request is validated while ip reads the guest: ip works in a
 * process of its own, so the two overlap (UpdateRoutes, Apply). A small one
 * is refused before any read.
 */

/** Entries (routes) from which a request is validated beside the first read. */
export const VALIDATE_WHILE_READING = 1000;

/**
 * Starts `read` and runs `validate` while it runs. A refusal stops the read
 * and is thrown: nothing was changed.
 */
export function validateWhileReading<R, V>(
  signal: AbortSignal,
  read: (signal: AbortSignal) => Promise<R>,
  validate: () => V,
): { reading: Promise<R>; valid: V } {
  const stop = new AbortController();
  const reading = read(AbortSignal.any([signal, stop.signal]));
  try {
    return { reading, valid: validate() };
  } catch (err) {
    stop.abort(err);
    reading.catch(() => {});
    throw err;
  }
}
