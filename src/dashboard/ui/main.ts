import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
document.getElementById("view")!.textContent = "dashboard " + typeof uPlot;
