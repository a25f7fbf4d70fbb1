/**
 * The store's Lua scripts. `choreoWrite` is invariant 1 in one atomic step
 * per write: check the expected revision, take the next revision, write the
 * object and its index entries, and append the change record for the relay.
 * One call applies a batch of writes in order, each with its own check,
 * revision and answer (one refused leaves the others as they would be alone).
 *
 * The fence: no write is applied while the revision is below the event
 * log's last sequence as the caller knows it (ARGV[1]) or as a repair wrote
 * it (the fence key) — Redis lost its tail (an older AOF, a power cut), and a
 * write now would take a revision the log already holds for another change.
 *
 * KEYS: rev, changes, fence, then per write: object, primary index, its
 *       secondary index keys.
 * ARGV: the floor (the log's last sequence known to the caller), then per
 *       write: number of secondary keys, mode (create|update|delete),
 *       expected revision ("" = any), member, object bytes, event bytes,
 *       subject, then one op per secondary key ("+" add member, "-" remove).
 * Returns two numbers per write: the new revision and 0, or {code, current
 * revision}: -1 exists (create), -2 not found, -3 revision mismatch, -4 the
 * store is behind the event log (fenced: nothing written).
 */
export const WRITE_SCRIPT = `
local out = {}
local k = 4
local a = 2
local floor = math.max(tonumber(ARGV[1]) or 0, tonumber(redis.call('GET', KEYS[3]) or '0'))
local now = tonumber(redis.call('GET', KEYS[1]) or '0')
if now < floor then
  while a <= #ARGV do
    out[#out + 1] = -4
    out[#out + 1] = now
    a = a + 7 + tonumber(ARGV[a])
  end
  return out
end
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

/**
 * One object read with the store's revision, to tell a read of a store that
 * lost its tail (revision below the event log's) from a current one.
 * KEYS: object, rev. Returns {bytes or false, revision or false, store revision}.
 */
export const GET_SCRIPT = `
local h = redis.call('HMGET', KEYS[1], 'v', 'r')
return {h[1], h[2], redis.call('GET', KEYS[2]) or '0'}
`;

/**
 * Puts back one change the event log holds and Redis lost (a repair): the
 * object at its revision, or its removal, with its index entries; the
 * revision line moves up to it. No change record (the log has it). An object
 * already at this revision or a later one is left alone, so a repair run
 * twice, or by two replicas, changes nothing more.
 *
 * KEYS: rev, object, primary index, then the secondary index keys.
 * ARGV: revision, mode (put|delete), member, object bytes, then one op per
 *       secondary key ("+" add member, "-" remove).
 * Returns 1 when applied, 0 when the object was already as new.
 */
export const RESTORE_SCRIPT = `
local rev = tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[2], 'r') or '0')
local applied = 0
if cur < rev then
  if ARGV[2] == 'delete' then
    redis.call('DEL', KEYS[2])
    redis.call('ZREM', KEYS[3], ARGV[3])
  else
    redis.call('HSET', KEYS[2], 'v', ARGV[4], 'r', rev)
    redis.call('ZADD', KEYS[3], 0, ARGV[3])
  end
  for j = 4, #KEYS do
    if ARGV[j + 1] == '+' then
      redis.call('ZADD', KEYS[j], 0, ARGV[3])
    else
      redis.call('ZREM', KEYS[j], ARGV[3])
    end
  end
  applied = 1
end
if tonumber(redis.call('GET', KEYS[1]) or '0') < rev then redis.call('SET', KEYS[1], rev) end
return applied
`;
