// SPDX-License-Identifier: Apache-2.0
// The model's tokenizer (tokenizer.json, read by @huggingface/tokenizers) and its ChatML prompt.
import { readFileSync } from 'node:fs';

import { Tokenizer } from '@huggingface/tokenizers';

import type { ChatFormat } from '../model/smollm2.js';

export class ChatTokenizer {
  readonly #tokenizer: Tokenizer;
  readonly chat: ChatFormat;

  constructor(tokenizerJson: string, chat: ChatFormat) {
    this.#tokenizer = new Tokenizer(JSON.parse(readFileSync(tokenizerJson, 'utf8')), {});
    this.chat = chat;
  }

  encode(text: string): number[] {
    return this.#tokenizer.encode(text).ids;
  }

  /** Special tokens included: decode(encode(text)) === text. */
  decode(ids: readonly number[]): string {
    return this.#tokenizer.decode([...ids], { skip_special_tokens: false });
  }

  /** One user turn after the template's default system turn, ending where the reply starts. */
  chatPrompt(user: string): string {
    const { turn_start: s, turn_end: e, default_system: system } = this.chat;
    return `${system ? `${s}system\n${system}${e}\n` : ''}${s}user\n${user}${e}\n${s}assistant\n`;
  }
}

/** Text of a growing token sequence, piece by piece: holds back an incomplete UTF-8 character
 *  (decoded as U+FFFD) until the token that completes it arrives. */
export class TextStream {
  readonly #tokenizer: ChatTokenizer;
  readonly #ids: number[] = [];
  #emitted = 0;

  constructor(tokenizer: ChatTokenizer) {
    this.#tokenizer = tokenizer;
  }

  push(id: number): string {
    this.#ids.push(id);
    const text = this.#tokenizer.decode(this.#ids);
    if (text.endsWith('\uFFFD')) return '';
    const piece = text.slice(this.#emitted);
    this.#emitted = text.length;
    return piece;
  }
}
