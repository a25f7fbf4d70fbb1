/**
 * The store's Lua scripts. `choreoWrite` is invariant 1 in one atomic step:
 * check the expected revision, take the next revision, write the object and
 * its index entries, and append the change record for the relay.
 *
 * KEYS: rev, changes, object, primary index, then secondary index keys.
 * ARGV: mode (create|update|delete), expected revision ("" = any),
 *       member, object bytes, event bytes, subject, then one op per
 *       secondary key ("+" add member, "-" remove member).
 * Returns the new revision, or {code, current revision}:
 *   -1 exists (create), -2 not found, -3 revision mismatch.
 */
export const WRITE_SCRIPT = `
local mode = ARGV[1]
local cur = redis.call('HGET', KEYS[3], 'r')
if mode == 'create' then
  if cur then return {-1, tonumber(cur)} end
else
  if not cur then return {-2, 0} end
  if ARGV[2] ~= '' and ARGV[2] ~= cur then return {-3, tonumber(cur)} end
end
local rev = redis.call('INCR', KEYS[1])
if mode == 'delete' then
  redis.call('DEL', KEYS[3])
  redis.call('ZREM', KEYS[4], ARGV[3])
else
  redis.call('HSET', KEYS[3], 'v', ARGV[4], 'r', rev)
  redis.call('ZADD', KEYS[4], 0, ARGV[3])
end
for i = 5, #KEYS do
  if ARGV[i + 2] == '+' then
    redis.call('ZADD', KEYS[i], 0, ARGV[3])
  else
    redis.call('ZREM', KEYS[i], ARGV[3])
  end
end
redis.call('XADD', KEYS[2], rev .. '-0', 's', ARGV[6], 'e', ARGV[5])
return {rev, 0}
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
