// SPDX-License-Identifier: Apache-2.0
// One updating status line on stderr when it is a terminal; nothing at all otherwise (logs, CI).
export class Progress {
  readonly #enabled: boolean;
  #shown = false;

  constructor(enabled = Boolean(process.stderr.isTTY)) {
    this.#enabled = enabled;
  }

  update(text: string): void {
    if (!this.#enabled) return;
    process.stderr.write(`\r\x1b[2K${text}`);
    this.#shown = true;
  }

  done(): void {
    if (this.#enabled && this.#shown) process.stderr.write('\r\x1b[2K');
    this.#shown = false;
  }
}
