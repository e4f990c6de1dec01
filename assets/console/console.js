// The operator console's live tail: an EventSource on the tenant's stream (the session cookie
// authenticates it), each event added as text, never as markup. Loaded as a file: the console's
// Content-Security-Policy runs no inline script.
(function () {
  'use strict';
  var MAX_ROWS = 200;
  var current = null;

  function describe(data) {
    try {
      var event = JSON.parse(data);
      var subject = event.subject ? ' ' + event.subject : '';
      return (event.time || '') + '  ' + (event.type || '?') + subject + '  ' + (event.id || '');
    } catch {
      return data;
    }
  }

  function start() {
    var list = document.querySelector('[data-tail-src]');
    var status = document.querySelector('[data-tail-status]');
    var src = list ? list.getAttribute('data-tail-src') : null;
    if (current && (!list || current.src !== src)) {
      current.source.close();
      current = null;
    }
    if (!list || current) return;
    var source = new EventSource(src);
    current = { source: source, src: src };
    var received = 0;
    source.onopen = function () {
      if (status) status.textContent = 'Live: waiting for events.';
    };
    source.onerror = function () {
      if (status) status.textContent = 'Disconnected; reconnecting…';
    };
    source.onmessage = function (message) {
      received += 1;
      var item = document.createElement('li');
      item.textContent = describe(message.data);
      list.insertBefore(item, list.firstChild);
      while (list.children.length > MAX_ROWS) list.removeChild(list.lastChild);
      list.setAttribute('data-received', String(received));
      if (status) status.textContent = 'Live: ' + received + ' event' + (received === 1 ? '' : 's') + ' received.';
    };
  }

  document.addEventListener('DOMContentLoaded', start);
  document.addEventListener('htmx:afterSettle', start);
})();
