#pragma once
/// @file Visual style of one plotted series and the colour-blind-safe palette.
///
/// Why a fixed palette: figures are compared across methods and papers, so every figure uses the
/// same colour order. The order is Okabe & Ito's, which stays distinguishable under the common
/// colour-vision deficiencies and in greyscale print (yellow, the weakest on white, comes last).
/// References: M. Okabe and K. Ito, "Color Universal Design" (2008); P. Tol, "Colour Schemes",
/// SRON/EPS/TN/09-002.
#include <array>
#include <cstddef>
#include <string>

namespace uqnn::plot {

/// Okabe-Ito colours, in the order series take them: blue, vermillion, bluish green,
/// reddish purple, orange, sky blue, black, yellow.
inline constexpr std::array<const char*, 8> kPalette = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                        "#E69F00", "#56B4E9", "#000000", "#F0E442"};

/// Neutral grey for reference lines (diagonals, zero lines).
inline constexpr const char* kReferenceGrey = "#666666";

/// The `i`-th palette colour (wraps around).
inline const char* palette_colour(std::size_t i) { return kPalette[i % kPalette.size()]; }

/// Line dash patterns.
enum class Dash { Solid, Dashed, Dotted, DashDot };

/// Point markers (filled where gnuplot has a filled form).
enum class Marker { Circle, Square, Triangle, Diamond, Cross, Plus };

/// How one series is drawn. Empty `colour` means "the panel's next palette colour".
struct Style {
  std::string colour;         ///< "#RRGGBB"; empty = next palette colour of the panel
  double line_width = 2.0;    ///< in gnuplot line-width units (1 = thinnest readable line)
  Dash dash = Dash::Solid;    ///< dash pattern of lines
  double alpha = 1.0;         ///< opacity in [0, 1]; 1 = opaque
  Marker marker = Marker::Circle;  ///< marker of points
  double point_size = 0.8;    ///< marker size in gnuplot units
};

/// Where a panel's legend goes. `Auto` picks an inside corner that holds no data and otherwise
/// puts the legend below the plot, so the legend never hides data.
enum class KeyPosition { Auto, TopLeft, TopRight, BottomLeft, BottomRight, Below, Right, None };

}  // namespace uqnn::plot
