// The keys a JSON document may hold, checked in one pass before the document is parsed: memory bounded by
// its nesting depth and time by its bytes, so a document with a key its reader does not know is refused as
// fast as it is read, whatever the key holds (a checkpoint manifest: train/checkpoint_manifest.h).
#pragma once

#include <map>
#include <set>
#include <string>

namespace tz {

// The keys allowed at each place: "" is the top level, "a.b" the object at key b of the object at key a,
// "a[]" the elements of the array at key a. An object at a place not listed may hold no keys.
using JsonKeySchema = std::map<std::string, std::set<std::string>>;

// Throws at the first key `schema` does not list for its place, naming `source`, the key with its place
// ("files[0].sections[2].zz"), `what` ("a tierzero checkpoint manifest") and `hint`. Text that is not JSON,
// or nests deeper than kMaxJsonDepth, is left to the parser (parse_json_bounded), which says what is wrong.
void check_json_keys(const std::string& text, const std::string& source, const JsonKeySchema& schema,
                     const std::string& what, const std::string& hint);

}  // namespace tz
