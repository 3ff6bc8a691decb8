; Inno Setup 6 script: the Windows installer of Manifold Studio.
;
; Made by `python installer/build.py --installer` on Windows, which runs
;   iscc /DAppVersion=0.1.0 /DSourceDir=dist\manifold-studio /DOutputDir=dist /DIconFile=... manifold-studio.iss
; SourceDir is the PyInstaller onedir bundle (manifold-studio.exe, manifold-studio-cli.exe, _internal\).
; Per-user install by default (no administrator rights needed); an administrator may install
; for all users. Start-menu entry, optional desktop icon, uninstaller in "Apps & features".

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\manifold-studio"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif
#ifndef IconFile
  #define IconFile "manifold-studio.ico"
#endif
#define AppName "Manifold Studio"
#define AppExe "manifold-studio.exe"

[Setup]
AppId={{6B1F3E0A-4C7D-4E58-9A1B-2D5C8E7F9A10}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=Manifold Studio developers
DefaultDirName={autopf}\Manifold Studio
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=commandline dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#OutputDir}
OutputBaseFilename=manifold-studio-{#AppVersion}-windows-setup
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName} {#AppVersion}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ChangesAssociations=no

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\{#AppName}"; Filename: "{app}\{#AppExe}"; Comment: "Point-and-click manifold learning"
Name: "{group}\{#AppName} self-test"; Filename: "{cmd}"; Parameters: "/k ""{app}\manifold-studio-cli.exe"" --self-test"; Comment: "Check that the installation works"
Name: "{group}\Uninstall {#AppName}"; Filename: "{uninstallexe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; files the application may have written next to itself (none expected; keeps the folder clean)
Type: filesandordirs; Name: "{app}\_internal\__pycache__"
Type: dirifempty; Name: "{app}"
