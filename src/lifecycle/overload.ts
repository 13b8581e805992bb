// How late the event loop runs. A timer ticks every `interval` ms; how much later than due it
// fires is the delay. Asked between ticks, the time since the last tick counts too, so a loop
// blocked right now reads as lagging before the next tick can say so.
import { now } from './deadline';

export interface LoopMonitor {
  /** The current event loop delay, in ms. */
  delay(): number;
  stop(): void;
}

export function monitorLoop(interval = 200): LoopMonitor {
  let last = now();
  let measured = 0;
  const timer = setInterval(() => {
    const at = now();
    measured = Math.max(0, at - last - interval);
    last = at;
  }, interval);
  timer.unref();
  return {
    delay: () => Math.max(measured, now() - last - interval),
    stop: () => clearInterval(timer),
  };
}
