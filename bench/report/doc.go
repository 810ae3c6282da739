// Package report writes the benchmark's document: docs/benchmarks.md and
// its plots, from the reports a run of the benchmark wrote (bench.Report),
// the facts of the machine it ran on and the time it was made.
//
// Render is a pure function of those: the same input gives the same
// Markdown and the same SVG files, byte for byte, so the document is
// checked by golden tests from synthetic results and never edited by
// hand. ReadMachine gathers the machine's facts for it; the driver
// (syncpod-bench report) writes the files.
//
// The document holds the method, the machine (cores, memory, kernel,
// operating system, the runtimes and the other components' versions), the
// date, and per section of the run the table bench.Table prints (medians,
// p99, ratios with their 95 % intervals), each row that two or more
// agents measured several times as a box plot of every agent's samples,
// and the start time of N pods asked for at once against N.
package report
