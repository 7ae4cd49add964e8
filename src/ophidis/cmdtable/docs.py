"""One-line command summaries for COMMAND DOCS, written for Ophidis.

Redis's metadata in ``data/commands.json`` carries no summaries; redis-cli
needs one per command for its inline help, so every command gets a short
description here (a generic one when none is listed).
"""

_S = """
acl|Access control list management
acl|cat|List ACL categories, or the commands of one category
acl|deluser|Delete ACL users
acl|dryrun|Check whether a user could run a command
acl|genpass|Produce a random password
acl|getuser|Describe one ACL user
acl|help|Describe the ACL subcommands
acl|list|Dump ACL rules in config file form
acl|load|Load ACL users from the ACL file
acl|log|Show or reset recent ACL denials
acl|save|Write ACL users to the ACL file
acl|setuser|Create or change an ACL user
acl|users|List ACL user names
acl|whoami|Name of the user of this connection
append|Append bytes to a string value
arcount|Number of elements of an array
ardel|Delete elements of an array by index
ardelrange|Delete the elements in index ranges of an array
arget|Element at an index of an array
argetrange|Every position of an index range of an array
argrep|Indexes of the array elements that match predicates
arinfo|Describe an array's size and layout
arinsert|Append values at an array's insert cursor
arlastitems|Positions last written by ARINSERT or ARRING
arlen|Highest index of an array plus one
armget|Elements at several indexes of an array
armset|Set elements at several indexes of an array
arnext|Index the next ARINSERT writes to
arop|Aggregate the elements of an array range
arring|Write values into an array used as a ring buffer
arscan|Elements of an index range of an array, with indexes
arseek|Move an array's insert cursor
arset|Set elements at consecutive indexes of an array
asking|Mark the next command as following an ASK redirect
auth|Authenticate the connection
bgrewriteaof|Rewrite the append only file in the background
bgsave|Save a snapshot of the dataset in the background
bitcount|Count set bits in a string
bitfield|Read and write integer fields packed in a string
bitfield_ro|Read integer fields packed in a string
bitop|Bitwise AND/OR/XOR/NOT of strings into a destination key
bitpos|Position of the first bit set to 0 or 1
blmove|Move an element between lists, waiting for one if needed
blmpop|Pop elements from the first non-empty list, waiting if needed
blpop|Pop the head of the first non-empty list, waiting if needed
brpop|Pop the tail of the first non-empty list, waiting if needed
brpoplpush|Pop a list tail and push it to another list, waiting if needed
bzmpop|Pop members from the first non-empty sorted set, waiting if needed
bzpopmax|Pop the highest-scored member, waiting if needed
bzpopmin|Pop the lowest-scored member, waiting if needed
client|Client connection management
client|caching|Control tracking of the keys read by the next command
client|getname|Name of this connection
client|getredir|Client id that receives tracking redirections
client|help|Describe the CLIENT subcommands
client|id|Id of this connection
client|info|Describe this connection
client|kill|Close client connections
client|list|Describe client connections
client|no-evict|Exclude this client from client eviction
client|pause|Suspend command processing of clients for a while
client|reply|Turn server replies on or off
client|setname|Name this connection
client|tracking|Turn client side caching support on or off
client|trackinginfo|Show the client side caching state of this connection
client|unblock|Unblock a client blocked in a command
client|unpause|Resume clients paused by CLIENT PAUSE
cluster|Cluster management
cluster|addslots|Assign hash slots to this node
cluster|addslotsrange|Assign ranges of hash slots to this node
cluster|bumpepoch|Advance the cluster config epoch
cluster|count-failure-reports|Number of failure reports about a node
cluster|countkeysinslot|Number of keys in a hash slot
cluster|delslots|Unassign hash slots from this node
cluster|delslotsrange|Unassign ranges of hash slots from this node
cluster|failover|Promote this replica over its master
cluster|flushslots|Unassign every hash slot of this node
cluster|forget|Drop a node from the node table
cluster|getkeysinslot|Key names stored in a hash slot
cluster|help|Describe the CLUSTER subcommands
cluster|info|Cluster state summary
cluster|keyslot|Hash slot of a key name
cluster|links|Connections to the other nodes
cluster|meet|Join another node to the cluster
cluster|myid|Id of this node
cluster|myshardid|Id of this node's shard
cluster|nodes|Cluster configuration as seen by this node
cluster|replicas|Replicas of a master node
cluster|replicate|Become a replica of a master node
cluster|reset|Reset the cluster state of this node
cluster|saveconfig|Write the cluster configuration to disk
cluster|set-config-epoch|Set the config epoch of a new node
cluster|setslot|Change the state of a hash slot
cluster|shards|Slot ranges and nodes of every shard
cluster|slaves|Replicas of a master node (old name)
cluster|slot-stats|Usage statistics of this shard's slots
cluster|slots|Mapping of hash slots to nodes
command|Details about every command
command|count|Number of commands
command|docs|Documentation of commands
command|getkeys|Key names in a full command line
command|getkeysandflags|Key names and access flags in a full command line
command|help|Describe the COMMAND subcommands
command|info|Details about given commands
command|list|Command names, optionally filtered
config|Configuration management
config|get|Read configuration parameters
config|help|Describe the CONFIG subcommands
config|resetstat|Reset statistics
config|rewrite|Write the running configuration to the config file
config|set|Change configuration parameters
copy|Copy a key's value to another key
dbsize|Number of keys in the selected database
debug|Debugging and testing helpers
decr|Subtract one from an integer value
decrby|Subtract a number from an integer value
del|Remove keys
delex|Delete a key, if its value or digest matches
digest|XXH3 digest of a string value
discard|Abandon a transaction
dump|Serialize a value
echo|Reply with the given message
eval|Run a Lua script
evalsha|Run a cached Lua script by its SHA1
evalsha_ro|Run a cached read-only Lua script by its SHA1
eval_ro|Run a read-only Lua script
exec|Run the queued commands of a transaction
exists|Count how many of the given keys exist
expire|Set a key's time to live in seconds
expireat|Set a key's expiry as a Unix time in seconds
expiretime|Expiry of a key as a Unix time in seconds
failover|Hand the master role over to a replica
fcall|Call a library function
fcall_ro|Call a read-only library function
flushall|Remove every key of every database
flushdb|Remove every key of the selected database
function|Function library management
function|delete|Remove a library
function|dump|Serialize all libraries
function|flush|Remove all libraries
function|help|Describe the FUNCTION subcommands
function|kill|Stop the running function
function|list|Describe loaded libraries
function|load|Create or replace a library
function|restore|Restore libraries from a dump
function|stats|State of the function engine
geoadd|Add positioned members to a geo index
geodist|Distance between two geo members
geohash|Geohash strings of members
geopos|Longitude and latitude of members
georadius|Members within a radius of a point
georadiusbymember|Members within a radius of a member
georadiusbymember_ro|Members within a radius of a member (read-only)
georadius_ro|Members within a radius of a point (read-only)
geosearch|Members inside a circle or a box
geosearchstore|Store the members inside a circle or a box
get|Value of a key
getbit|Bit value at an offset
getdel|Value of a key, removing the key
getex|Value of a key, changing its expiry
getrange|Substring of a string value
getset|Replace a value, returning the old one
hdel|Remove hash fields
hello|Handshake: protocol version, authentication, name
hexists|Whether a hash field exists
hexpire|Set the time to live of hash fields in seconds
hexpireat|Set when hash fields expire, as a unix time in seconds
hexpiretime|When hash fields expire, as a unix time in seconds
hget|Value of a hash field
hgetall|All fields and values of a hash
hgetdel|Values of hash fields, deleting them
hgetex|Values of hash fields, setting or removing their expiry
hincrby|Add an integer to a hash field
hincrbyfloat|Add a float to a hash field
hkeys|Field names of a hash
hlen|Number of fields of a hash
hmget|Values of several hash fields
hmset|Set several hash fields
hpersist|Remove the expiry of hash fields
hpexpire|Set the time to live of hash fields in milliseconds
hpexpireat|Set when hash fields expire, as a unix time in milliseconds
hpexpiretime|When hash fields expire, as a unix time in milliseconds
hpttl|Time to live of hash fields in milliseconds
hrandfield|Random fields of a hash
hscan|Iterate over the fields of a hash
hset|Set hash fields
hsetex|Set hash fields and their expiry, optionally only if they all exist or none does
hsetnx|Set a hash field only when it is absent
hstrlen|Length of a hash field's value
httl|Time to live of hash fields in seconds
hvals|Values of a hash
incr|Add one to an integer value
incrby|Add a number to an integer value
incrbyfloat|Add a float to a numeric value
increx|Increment within bounds, with an expiration
info|Server information and statistics
keys|Key names matching a pattern
lastsave|Unix time of the last successful save
latency|Latency monitor
latency|doctor|Latency analysis report
latency|graph|ASCII graph of an event's latency
latency|help|Describe the LATENCY subcommands
latency|histogram|Per-command latency distribution
latency|history|Latency samples of an event
latency|latest|Latest latency sample of every event
latency|reset|Clear latency samples
lcs|Longest common subsequence of two strings
lindex|Element at an index of a list
linsert|Insert an element before or after another
llen|Length of a list
lmove|Move an element from one list to another
lmpop|Pop elements from the first non-empty list
lolwut|Show computer art and the server version
lpop|Pop elements from the head of a list
lpos|Positions of matching list elements
lpush|Prepend elements to a list
lpushx|Prepend elements to an existing list
lrange|Range of list elements
lrem|Remove matching list elements
lset|Replace the element at an index
ltrim|Keep only a range of a list
memory|Memory introspection
memory|doctor|Memory analysis report
memory|help|Describe the MEMORY subcommands
memory|malloc-stats|Allocator statistics
memory|purge|Ask the allocator to release memory
memory|stats|Memory usage details
memory|usage|Estimated memory used by a key
mget|Values of several keys
migrate|Move keys to another instance
module|Module management
module|help|Describe the MODULE subcommands
module|list|Loaded modules
module|load|Load a module
module|loadex|Load a module with options
module|unload|Unload a module
monitor|Stream every command the server runs
move|Move a key to another database
mset|Set several keys
msetex|Set several keys with one expiration, all or none
msetnx|Set several keys only if none exists
multi|Start a transaction
object|Object introspection
object|encoding|Internal encoding of a value
object|freq|Access frequency counter of a key
object|help|Describe the OBJECT subcommands
object|idletime|Seconds since a key was last accessed
object|refcount|Reference count of a value
persist|Remove a key's expiry
pexpire|Set a key's time to live in milliseconds
pexpireat|Set a key's expiry as a Unix time in milliseconds
pexpiretime|Expiry of a key as a Unix time in milliseconds
pfadd|Add elements to a HyperLogLog
pfcount|Estimated cardinality of HyperLogLogs
pfdebug|HyperLogLog internals
pfmerge|Merge HyperLogLogs
pfselftest|HyperLogLog self test
ping|Check the connection
psetex|Set a value with a time to live in milliseconds
psubscribe|Subscribe to channel patterns
psync|Replication stream request from a replica
pttl|Time to live of a key in milliseconds
publish|Send a message to a channel
pubsub|Pub/Sub introspection
pubsub|channels|Active channels
pubsub|help|Describe the PUBSUB subcommands
pubsub|numpat|Number of pattern subscriptions
pubsub|numsub|Subscriber counts of channels
pubsub|shardchannels|Active shard channels
pubsub|shardnumsub|Subscriber counts of shard channels
punsubscribe|Unsubscribe from channel patterns
quit|Close the connection
randomkey|A random key name
readonly|Allow reads from a cluster replica
readwrite|Stop reads from a cluster replica
rename|Rename a key
renamenx|Rename a key when the new name is free
replconf|Replication settings of a replica
replicaof|Become a replica of another server, or stop
reset|Reset the connection state
restore|Create a key from a serialized value
restore-asking|Create a key from a serialized value (cluster migration)
role|Replication role of this server
rpop|Pop elements from the tail of a list
rpoplpush|Pop a list tail and push it to another list
rpush|Append elements to a list
rpushx|Append elements to an existing list
sadd|Add set members
save|Save a snapshot of the dataset
scan|Iterate over key names
scard|Number of set members
script|Lua script cache management
script|debug|Lua debugger mode
script|exists|Whether scripts are cached
script|flush|Empty the script cache
script|help|Describe the SCRIPT subcommands
script|kill|Stop the running script
script|load|Cache a script
sdiff|Difference of sets
sdiffcard|Number of members of a set difference
sdiffstore|Store the difference of sets
select|Select a database
sentinel|Sentinel commands
set|Set the value of a key
setbit|Set or clear a bit at an offset
setex|Set a value with a time to live in seconds
setnx|Set a value only when the key is absent
setrange|Overwrite part of a string
shutdown|Stop the server
sinter|Intersection of sets
sintercard|Size of the intersection of sets
sinterstore|Store the intersection of sets
sismember|Whether a value is a set member
slaveof|Become a replica of another server, or stop
slowlog|Slow log management
slowlog|get|Entries of the slow log
slowlog|help|Describe the SLOWLOG subcommands
slowlog|len|Number of slow log entries
slowlog|reset|Empty the slow log
smembers|Members of a set
smismember|Whether values are set members
smove|Move a member between sets
sort|Sort a list, set or sorted set
sort_ro|Sort a list, set or sorted set (read-only)
spop|Pop random set members
spublish|Send a message to a shard channel
srandmember|Random set members
srem|Remove set members
sscan|Iterate over set members
ssubscribe|Subscribe to shard channels
strlen|Length of a string value
subscribe|Subscribe to channels
substr|Substring of a string value
sunion|Union of sets
sunioncard|Number of members of a set union
sunionstore|Store the union of sets
sunsubscribe|Unsubscribe from shard channels
swapdb|Exchange two databases
sync|Full synchronization request from a replica
time|Server clock
touch|Update the access time of keys
ttl|Time to live of a key in seconds
type|Type of a key's value
unlink|Remove keys, freeing memory in the background
unsubscribe|Unsubscribe from channels
unwatch|Forget watched keys
wait|Wait for replicas to acknowledge writes
watch|Watch keys for a transaction
xack|Acknowledge stream messages
xackdel|Acknowledge stream messages and delete them
xadd|Append an entry to a stream
xautoclaim|Claim idle pending messages
xcfgset|Set a stream's idempotent-add settings
xclaim|Take over pending messages
xdel|Remove stream entries
xdelex|Remove stream entries, choosing what happens to group references
xgroup|Consumer group management
xgroup|create|Create a consumer group
xgroup|createconsumer|Create a consumer
xgroup|delconsumer|Remove a consumer
xgroup|destroy|Remove a consumer group
xgroup|help|Describe the XGROUP subcommands
xgroup|setid|Move a group's last delivered id
xidmprecord|Record an idempotent ID of a stream entry
xinfo|Stream introspection
xinfo|consumers|Consumers of a group
xinfo|groups|Groups of a stream
xinfo|help|Describe the XINFO subcommands
xinfo|stream|Details of a stream
xlen|Number of stream entries
xnack|Release pending stream messages back to the group
xpending|Pending messages of a group
xrange|Stream entries in an id range
xread|Read stream entries, optionally waiting
xreadgroup|Read stream entries as a group consumer
xrevrange|Stream entries in an id range, newest first
xsetid|Set a stream's last id
xtrim|Shorten a stream
zadd|Add or update sorted set members
zcard|Number of sorted set members
zcount|Members within a score range
zdiff|Difference of sorted sets
zdiffstore|Store the difference of sorted sets
zincrby|Add to a member's score
zinter|Intersection of sorted sets
zintercard|Size of the intersection of sorted sets
zinterstore|Store the intersection of sorted sets
zlexcount|Members within a lexicographical range
zmpop|Pop members from the first non-empty sorted set
zmscore|Scores of several members
zpopmax|Pop the highest-scored members
zpopmin|Pop the lowest-scored members
zrandmember|Random sorted set members
zrange|Members in a range of ranks, scores or names
zrangebylex|Members in a lexicographical range
zrangebyscore|Members in a score range
zrangestore|Store a range of a sorted set
zrank|Rank of a member
zrem|Remove sorted set members
zremrangebylex|Remove members in a lexicographical range
zremrangebyrank|Remove members in a rank range
zremrangebyscore|Remove members in a score range
zrevrange|Members in a rank range, highest first
zrevrangebylex|Members in a lexicographical range, reversed
zrevrangebyscore|Members in a score range, highest first
zrevrank|Rank of a member, highest first
zscan|Iterate over sorted set members
zscore|Score of a member
zunion|Union of sorted sets
zunionstore|Store the union of sorted sets
"""

SUMMARIES = {}
for _line in _S.strip().splitlines():
    _name, _, _text = _line.rpartition("|")
    SUMMARIES[_name] = _text


def summary(fullname: str) -> str:
    s = SUMMARIES.get(fullname)
    if s is None:
        parent, _, sub = fullname.partition("|")
        if sub:
            return "The %s subcommand of %s" % (sub.upper(), parent.upper())
        return "The %s command" % fullname.upper()
    return s
