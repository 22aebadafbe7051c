// SPDX-License-Identifier: Apache-2.0
// A chat prompt of exactly N tokens, for speed runs at fixed prompt lengths: the user turn is the
// start of a built-in text (repeated when N needs more), cut where the formatted prompt has N tokens.
import { OnebitInputError } from '../../errors.js';
import type { ChatTokenizer } from './chat_tokenizer.js';

export interface SizedPrompt {
  /** The user turn. */
  user: string;
  /** The chat-formatted prompt's tokens: exactly the requested number. */
  ids: number[];
}

/** Cuts tried before giving up: each moves the cut by what the last one missed by. */
const MAX_CUTS = 8;

export function sizedPrompt(tokenizer: ChatTokenizer, text: string, tokens: number): SizedPrompt {
  const template = tokenizer.encode(tokenizer.chatPrompt('')).length;
  if (tokens <= template)
    throw new OnebitInputError(
      `--prompt-tokens ${tokens} is too short: the chat template alone takes ${template} tokens; ask for at least ${template + 1}`,
    );
  // One space between words: a run of white space would merge into one token at the cut and make
  // some lengths impossible to hit.
  const words = text.trim().replace(/\s+/g, ' ');
  const unit = tokenizer.encode(words).length;
  if (unit === 0) throw new OnebitInputError('--prompt-tokens: the evaluation text to cut the prompt from is empty');
  const source = tokenizer.encode(
    Array<string>(Math.ceil((tokens - template) / unit) + 1)
      .fill(words)
      .join(' '),
  );
  let cut = tokens - template;
  for (let i = 0; i < MAX_CUTS; ++i) {
    const user = tokenizer.decode(source.slice(0, cut));
    const ids = tokenizer.encode(tokenizer.chatPrompt(user));
    if (ids.length === tokens) return { user, ids };
    cut += tokens - ids.length;
  }
  throw new OnebitInputError(
    `cannot cut the built-in text to a prompt of exactly ${tokens} tokens; try a length near it`,
  );
}
