# written by ooo-bench: 'gnuplot spin.gp', in this directory, draws spin.png
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1400,480 font ",10"
} else {
    set terminal png size 1400,480
}
set output "spin.png"
$spin_direct_0 << EOD
1 14556.0 79.36
8 5077.4 1581.06
32 4988.4 11993.09
EOD
$spin_mps_0 << EOD
1 13457.8 84.48
8 81974.8 109.06
32 104591.4 4177.92
EOD
$spin_ooo_0 << EOD
1 14131.2 83.45
8 24256.0 423.94
32 19555.8 8454.14
EOD
set multiplot layout 1,2 title "ooo-bench on NVIDIA H200, commit 06a1a71, 5.0 s per point, closed loop"
set grid
set key top left
set xlabel "tenants (T)"
set datafile missing "NaN"
set logscale x 2
set xrange [0.714286:44.8]
set xtics ("1" 1, "8" 8, "32" 32)
set yrange [0:*]
set yrange [0:*]
set title "spin: throughput (all tenants of the class)"
set ylabel "requests/s"
unset logscale y
plot $spin_direct_0 using 1:2 with linespoints lw 2 pt 5 title "direct", \
     $spin_mps_0 using 1:2 with linespoints lw 2 pt 7 title "mps", \
     $spin_ooo_0 using 1:2 with linespoints lw 2 pt 9 title "ooo"
set yrange [*:*]
set title "spin: p99 latency"
set ylabel "p99 latency (us)"
set logscale y
plot $spin_direct_0 using 1:3 with linespoints lw 2 pt 5 title "direct", \
     $spin_mps_0 using 1:3 with linespoints lw 2 pt 7 title "mps", \
     $spin_ooo_0 using 1:3 with linespoints lw 2 pt 9 title "ooo"
unset multiplot
