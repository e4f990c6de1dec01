import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ServerResponse } from 'node:http';
import type { PageAssets } from './consoleLayout.js';

interface Asset {
  path: string;
  integrity: string;
  contentType: string;
  body: Buffer;
}

// assets/console/ sits two levels above both src/console/ and dist/console/.
const OWN_ASSETS = new URL('../../assets/console/', import.meta.url);

/**
 * The console's static files: its stylesheet and script (assets/console/) and htmx, served from
 * the installed `htmx.org` package, never a CDN. Each is read once, at start, and served at a
 * path holding a digest of its content, so it can be cached for a year and an upgrade can never
 * meet a stale copy; pages link them with the same digest as Subresource Integrity.
 */
export class ConsoleAssets {
  private readonly byPath = new Map<string, Asset>();
  readonly page: PageAssets;

  constructor() {
    const htmx = createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js');
    const css = this.add('console', 'css', 'text/css; charset=utf-8', readFileSync(new URL('console.css', OWN_ASSETS)));
    const scripts = [
      this.add('htmx', 'js', 'text/javascript; charset=utf-8', readFileSync(htmx)),
      this.add('console', 'js', 'text/javascript; charset=utf-8', readFileSync(new URL('console.js', OWN_ASSETS))),
    ];
    this.page = { css, scripts };
  }

  /** Answers a request for a static file; false when `path` is none. */
  serve(path: string, res: ServerResponse): boolean {
    const asset = this.byPath.get(path);
    if (!asset) return false;
    res
      .writeHead(200, {
        'content-type': asset.contentType,
        'content-length': String(asset.body.length),
        'cache-control': 'public, max-age=31536000, immutable',
        'x-content-type-options': 'nosniff',
      })
      .end(asset.body);
    return true;
  }

  private add(name: string, extension: string, contentType: string, body: Buffer): Asset {
    const digest = createHash('sha384').update(body).digest();
    const path = `/console/static/${name}.${digest.toString('hex').slice(0, 16)}.${extension}`;
    const asset = { path, integrity: `sha384-${digest.toString('base64')}`, contentType, body };
    this.byPath.set(path, asset);
    return asset;
  }
}
