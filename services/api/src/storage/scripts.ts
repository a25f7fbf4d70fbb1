/**
 * The store's Lua scripts. `choreoWrite` is invariant 1 in one atomic step
 * per write: check the expected revision, take the next revision, write the
 * object and its index entries, and append the change record for the relay.
 * One call applies a batch of writes in order, each with its own check,
 * revision and answer (one refused leaves the others as they would be alone).
 *
 * KEYS: rev, changes, then per write: object, primary index, its secondary
 *       index keys.
 * ARGV: per write: number of secondary keys, mode (create|update|delete),
 *       expected revision ("" = any), member, object bytes, event bytes,
 *       subject, then one op per secondary key ("+" add member, "-" remove).
 * Returns two numbers per write: the new revision and 0, or {code, current
 * revision}: -1 exists (create), -2 not found, -3 revision mismatch.
 */
export const WRITE_SCRIPT = `
local out = {}
local k = 3
local a = 1
while a <= #ARGV do
  local nsec = tonumber(ARGV[a])
  local mode = ARGV[a + 1]
  local cur = redis.call('HGET', KEYS[k], 'r')
  local code = 0
  if mode == 'create' then
    if cur then code = -1 end
  elseif not cur then
    code = -2
  elseif ARGV[a + 2] ~= '' and ARGV[a + 2] ~= cur then
    code = -3
  end
  if code ~= 0 then
    out[#out + 1] = code
    out[#out + 1] = tonumber(cur or '0')
  else
    local rev = redis.call('INCR', KEYS[1])
    if mode == 'delete' then
      redis.call('DEL', KEYS[k])
      redis.call('ZREM', KEYS[k + 1], ARGV[a + 3])
    else
      redis.call('HSET', KEYS[k], 'v', ARGV[a + 4], 'r', rev)
      redis.call('ZADD', KEYS[k + 1], 0, ARGV[a + 3])
    end
    for j = 1, nsec do
      if ARGV[a + 6 + j] == '+' then
        redis.call('ZADD', KEYS[k + 1 + j], 0, ARGV[a + 3])
      else
        redis.call('ZREM', KEYS[k + 1 + j], ARGV[a + 3])
      end
    end
    redis.call('XADD', KEYS[2], rev .. '-0', 's', ARGV[a + 6], 'e', ARGV[a + 5])
    out[#out + 1] = rev
    out[#out + 1] = 0
  end
  k = k + 2 + nsec
  a = a + 7 + nsec
end
return out
`;

/**
 * A page of an index read at one revision.
 * KEYS: rev, index. ARGV: lex min, lex max, limit (0 = all), object key prefix.
 * Returns {revision, member1, bytes1, rev1, member2, …}.
 */
export const LIST_SCRIPT = `
local rev = tonumber(redis.call('GET', KEYS[1]) or '0')
local members
if tonumber(ARGV[3]) > 0 then
  members = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
else
  members = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2])
end
local out = {rev}
for _, m in ipairs(members) do
  local h = redis.call('HMGET', ARGV[4] .. m, 'v', 'r')
  if h[1] then
    out[#out + 1] = m
    out[#out + 1] = h[1]
    out[#out + 1] = h[2]
  end
end
return out
`;
