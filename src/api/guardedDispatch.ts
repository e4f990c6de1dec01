import type { Dispatcher } from 'undici';

/**
 * An interceptor that asks `guard` again at the moment a request is about to be written to its
 * socket, and aborts it with what the guard throws. The check before a request is handed to the
 * pool is not enough: a request that waits inside undici for a connection (one being opened, or
 * all of them busy) is written later, from an I/O callback, and a replica resumed from a pause runs
 * I/O callbacks before the timer that would drop its expired lease. undici calls `onRequestStart`
 * (or `onConnect`, for a handler of the older interface) right before it writes the request.
 */
export function guardBeforeWrite(guard: () => void): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) => dispatch(options, guardedHandler(handler, guard));
}

type Abort = (reason: Error) => void;
type LegacyHandler = Dispatcher.DispatchHandler & { onConnect?: (abort: Abort, context?: unknown) => void };

function guardedHandler(handler: Dispatcher.DispatchHandler, guard: () => void): Dispatcher.DispatchHandler {
  const refusal = (): Error | undefined => {
    try {
      guard();
      return undefined;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  };
  return new Proxy(handler as LegacyHandler, {
    get(target, property, receiver) {
      if (property === 'onRequestStart' && typeof target.onRequestStart === 'function') {
        const start = target.onRequestStart.bind(target);
        return (controller: Dispatcher.DispatchController, context: unknown) => {
          const refused = refusal();
          if (refused) controller.abort(refused);
          else start(controller, context);
        };
      }
      if (property === 'onConnect' && typeof target.onConnect === 'function') {
        const connect = target.onConnect.bind(target);
        return (abort: Abort, context?: unknown) => {
          connect(abort, context);
          const refused = refusal();
          if (refused) abort(refused);
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
