// The exit codes of every funcrun command, one rule for all (docs/cli.md lists them).
export const EXIT = Object.freeze({
  /** Done; or stopped by a signal once every request was answered. */
  OK: 0,
  /** The work failed: the function did not start, a fault crashed it, shutdown() failed, `invoke` got an error. */
  FAILED: 1,
  /** Bad use of the command line (an unknown command or flag, a value refused); nothing was done. */
  USAGE: 2,
  /** Stopped, but the drain was incomplete: requests cut at the end of the grace period, or waitUntil work left running. */
  INCOMPLETE_DRAIN: 3,
});

/** The Node.js lines funcrun supports: LTS lines still maintained. */
export const SUPPORTED_NODE = '22 and 24';

/**
 * A warning when this node is older than the oldest supported line, else undefined. It names the
 * fix where an old line usually comes from: Knative func's builders (its s2i builder's default
 * image is Node 20; its pack builder takes BP_NODE_VERSION), or an image built FROM an old node.
 */
export function unsupportedNode(version: string = process.versions.node): string | undefined {
  const major = Number(version.split('.')[0]);
  if (major >= 22) return undefined;
  return (
    `Node.js ${version} is not supported: funcrun runs on Node.js ${SUPPORTED_NODE} (older lines are past their end of life), and may fail here. ` +
    "Build on Node.js 24 or 22: with func build, BP_NODE_VERSION=24.* in func.yaml's build.buildEnvs (the pack builder), or " +
    'build.builderImages.s2i: registry.access.redhat.com/ubi9/nodejs-24-minimal (the s2i builder, whose default image is Node.js 20); ' +
    "with a Dockerfile, FROM node:24-alpine, as funcrun's examples/deploy/Dockerfile (docs/deploying.md#nodejs-lines)"
  );
}
