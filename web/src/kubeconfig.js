// The bearer token of a kubeconfig, for the login page's upload (and paste): the user of the
// current context, as kubectl picks it; else the only user with a token. Pure: text in,
// {token} or {error} out. It reads the block style that kubectl and `fatia token create` write
// (lists of `- name:` entries, two-space indents, plain or quoted scalars); anything else (flow
// style, anchors) is refused with a message rather than guessed at. A kubeconfig whose user has
// no token (client certificates, exec plugins) is refused: the dashboard logs in with a token.
const unquote = (v) => {
  const s = v.trim();
  if (s.startsWith('"') && s.endsWith('"') && s.length >= 2)
    return s.slice(1, -1).replace(/\\(["\\])/g, '$1');
  if (s.startsWith("'") && s.endsWith("'") && s.length >= 2) return s.slice(1, -1).replace(/''/g, "'");
  return s;
};

// The entries of a top-level list (users, contexts): [{name, fields: {key: value}}], the
// fields being those of the entry's nested map (user:, context:) flattened one level.
function entries(lines, key) {
  const out = [];
  let i = lines.findIndex((l) => l.replace(/\s+$/, '') === `${key}:`);
  if (i < 0) return out;
  let cur = null;
  for (i++; i < lines.length; i++) {
    const l = lines[i];
    if (!l.trim() || l.trim().startsWith('#')) continue;
    if (/^\S/.test(l) && !l.startsWith('-')) break; // the next top-level key
    const m = l.match(/^(\s*)(- )?\s*([A-Za-z0-9_.-]+):\s*(.*)$/);
    if (!m) continue;
    if (m[2] !== undefined && m[1].length === 0) {
      cur = { name: null, fields: {} };
      out.push(cur);
    }
    if (!cur) continue;
    // "- name: x" or "  name: x": the entry's own key; deeper ones are its map's (user:, context:)
    const own = m[1].length === 0 || (m[1].length === 2 && m[2] === undefined);
    if (own && m[3] === 'name') cur.name = unquote(m[4]);
    else if (!own && m[4] !== '') cur.fields[m[3]] = unquote(m[4]);
  }
  return out;
}

export function kubeconfigToken(text) {
  const lines = String(text).split(/\r?\n/);
  if (!lines.some((l) => /^(apiVersion|kind|users|contexts|clusters):/.test(l)))
    return { error: 'this is not a kubeconfig (no users: or contexts: section)' };
  const users = entries(lines, 'users');
  const contexts = entries(lines, 'contexts');
  const curLine = lines.find((l) => l.startsWith('current-context:'));
  const cur = curLine ? unquote(curLine.slice('current-context:'.length)) : '';
  let user = null;
  if (cur) {
    const ctx = contexts.find((c) => c.name === cur);
    if (!ctx) return { error: `current-context "${cur}" names no context of the kubeconfig` };
    user = users.find((u) => u.name === ctx.fields.user);
    if (!user) return { error: `context "${cur}" names user "${ctx.fields.user}", which the kubeconfig lacks` };
  } else {
    const withToken = users.filter((u) => u.fields.token);
    if (withToken.length !== 1) return { error: 'no current-context, and not exactly one user with a token' };
    user = withToken[0];
  }
  if (!user.fields.token)
    return { error: `user "${user.name}" has no token (client certificates and exec plugins cannot log in here)` };
  return { token: user.fields.token };
}
