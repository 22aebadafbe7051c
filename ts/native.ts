// SPDX-License-Identifier: Apache-2.0
// Loads the native addon (build/Release or prebuilds/<platform>-<arch>, via node-gyp-build) and,
// through it, onnxruntime-node's own ORT library with our EP registered in it.
import { existsSync } from 'node:fs';
import path from 'node:path';

import type { NativeAddon, NativeConstants, RuntimeInfo } from './addon_types.js';
import { OnebitLibraryError, fromNativeError } from './errors.js';

const packageRoot = path.join(__dirname, '..');

let addonFile: string | undefined;
let addon: NativeAddon | undefined;
let runtime: RuntimeInfo | undefined;

function addonPath(): string {
  if (addonFile) return addonFile;
  // Another build of the addon (the sanitizer job's); the EP library beside it unless ONEBIT_EP_LIB says.
  const fromEnv = process.env.ONEBIT_ADDON;
  if (fromEnv) {
    if (!path.isAbsolute(fromEnv) || !existsSync(fromEnv))
      throw new OnebitLibraryError(
        'ONEBIT_ADDON',
        `ONEBIT_ADDON must be the absolute path of a built onebit-ep.node; there is no such file: ${fromEnv}`,
      );
    addonFile = fromEnv;
    return addonFile;
  }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const nodeGypBuild = require('node-gyp-build') as { resolve(dir: string): string };
    addonFile = nodeGypBuild.resolve(packageRoot);
    return addonFile;
  } catch (error) {
    throw new OnebitLibraryError(
      'ONEBIT_ADDON',
      `the onebit-ep native addon is not built for ${process.platform}-${process.arch}: ${(error as Error).message}. ` +
        'Build it from source with `npm rebuild onebit-ep` (needs cmake and a C++20 compiler).',
    );
  }
}

/** The onnxruntime-node module the backend registers in and whose Tensor class it hands out. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const ortNode = () => require('onnxruntime-node') as typeof import('onnxruntime-node');

/** libonebit_ep.so: ONEBIT_EP_LIB if set, else the copy next to the addon. */
export function epLibraryPath(): string {
  const fromEnv = process.env.ONEBIT_EP_LIB;
  return path.resolve(
    fromEnv && fromEnv.length > 0 ? fromEnv : path.join(path.dirname(addonPath()), 'libonebit_ep.so'),
  );
}

/** The ORT library file of the onnxruntime-node this package resolves (the one the app uses). */
export function ortLibraryPath(): string {
  const ortNodeRoot = path.dirname(require.resolve('onnxruntime-node/package.json'));
  const file = path.join(ortNodeRoot, 'bin', 'napi-v6', process.platform, process.arch, 'libonnxruntime.so.1');
  if (!existsSync(file))
    throw new OnebitLibraryError(
      'ONEBIT_EP_LIBRARY',
      `onnxruntime-node has no ORT library at ${file}: reinstall onnxruntime-node`,
    );
  return file;
}

/** The addon alone, without ORT or the EP library (the probes need neither). */
export function loadAddon(): NativeAddon {
  if (addon) return addon;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(addonPath()) as NativeAddon;
}

/** Names, option values and limits as the native code defines them. */
export function nativeConstants(): NativeConstants {
  return loadAddon().constants;
}

/** Loads the addon, ORT and our EP once per process; later calls return the same runtime. */
export function loadNative(): { addon: NativeAddon; runtime: RuntimeInfo } {
  if (addon && runtime) return { addon, runtime };
  const file = addonPath();
  const epLibrary = epLibraryPath();
  if (!existsSync(epLibrary))
    throw new OnebitLibraryError(
      'ONEBIT_EP_LIBRARY',
      `the onebit EP library is missing: ${epLibrary}. Reinstall onebit-ep, run \`npm rebuild onebit-ep\`, ` +
        'or set ONEBIT_EP_LIB to the absolute path of a built libonebit_ep.so',
    );
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require(file) as NativeAddon;
  try {
    runtime = loaded.load(ortLibraryPath(), epLibrary);
  } catch (error) {
    throw fromNativeError(error);
  }
  addon = loaded;
  return { addon, runtime };
}
