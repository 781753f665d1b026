/* The slash commands the message box understands (seed §8.2). Add an entry to extend:
 * build(argument) returns the frame's fields (the caller adds sessionId). */

export const SLASH_COMMANDS = {
  compact: {
    // "/compact --preview [focus]": the summary is shown before it applies (issue 17)
    build(argument) {
      const frame = { type: "compact" };
      const flag = /^--preview(?:\s+|$)/.exec(argument);
      if (flag) {
        frame.preview = true;
        argument = argument.slice(flag[0].length).trim();
      }
      if (argument) frame.instructions = argument;
      return frame;
    },
  },
};

const SLASH_PATTERN = /^\/([A-Za-z][\w-]*)(?:\s+([\s\S]*))?$/;

/**
 * Classify what the user typed.
 *   {kind: "text", content}                   - an ordinary message
 *   {kind: "command", name, frame}            - a known slash command
 *   {kind: "unknown", name}                   - "/word" that is no command
 * Text that merely starts with a path ("/usr/bin/python fails") is ordinary text.
 */
export function parseSlashCommand(raw) {
  const text = (raw || "").trim();
  const match = SLASH_PATTERN.exec(text);
  if (!match) return { kind: "text", content: raw };
  const name = match[1].toLowerCase();
  const argument = (match[2] || "").trim();
  const command = Object.hasOwn(SLASH_COMMANDS, name) ? SLASH_COMMANDS[name] : null;
  if (!command) return { kind: "unknown", name: "/" + match[1] };
  return { kind: "command", name: name, frame: command.build(argument) };
}
