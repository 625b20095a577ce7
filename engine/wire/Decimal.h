// SPDX-License-Identifier: GPL-3.0-or-later
// A number as text for machines (Prometheus, CSV, logs): always '.' as the
// decimal point. printf("%g"), std::to_string(double) and ostreams follow
// the C locale, which the console's QApplication sets from the user's
// environment: under de_DE they write "2,5e-06", which Prometheus rejects.
#pragma once

#include <charconv>
#include <string>

namespace Floodgate::Wire {

// The shortest text that reads back as the same double ("2.5e-06",
// "0.000123", "5"); with `significantDigits`, what printf("%.Ng") writes in
// the C locale ("0.0001", "1e-05"), for texts that must stay as they were.
inline std::string decimal(double value, int significantDigits = 0)
{
    char buf[64];
    const auto r = significantDigits > 0 ? std::to_chars(buf, buf + sizeof buf, value, std::chars_format::general, significantDigits)
                                         : std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, r.ptr);
}

} // namespace Floodgate::Wire
