// SPDX-License-Identifier: MIT
// The Qt 6 Quick sample's home screen (qml-tiles.cpp): 16 labelled tiles in a grid.
import QtQuick

Window {
    width: 480
    height: 480
    visible: true
    title: "headstart"
    color: "#202428"

    GridView {
        objectName: "tiles"
        anchors.fill: parent
        anchors.margins: 8
        cellWidth: width / 4
        cellHeight: height / 4
        interactive: false
        model: ["Phone", "Messages", "Camera", "Photos", "Music", "Maps", "Clock", "Weather",
                "Mail", "Calendar", "Notes", "Files", "Settings", "Radio", "Games", "Help"]
        delegate: Rectangle {
            required property string modelData
            required property int index
            width: GridView.view.cellWidth - 8
            height: GridView.view.cellHeight - 8
            radius: 12
            color: Qt.hsla(index / 16, 0.5, 0.45, 1)
            Text {
                anchors.centerIn: parent
                text: parent.modelData
                color: "white"
                font.pixelSize: 16
            }
        }
    }
}
